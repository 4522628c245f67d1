//! The library's unit tests (`activation_kernels::unit_tests`, behind the feature
//! `unit-tests`), run here so that `cargo test` compiles the library once.

macro_rules! unit_tests {
    ($($(#[$attr:meta])* $module:ident: [$($test:ident),* $(,)?])*) => {$(
        $(#[$attr])*
        mod $module {
            $(
                #[test]
                fn $test() {
                    activation_kernels::unit_tests::$module::$test()
                }
            )*
        }
    )*};
}

unit_tests! {
    capi: [
        taylor_scalar_and_array,
        in_place_and_partial_overlap,
        refusals_write_nothing,
        every_function_matches_its_exact_kernel,
        bits_the_c_test_pins,
    ]
    gemm: [
        every_kernel_every_loop_boundary,
        production_blocking_fits_the_register_file,
        large_k_crosses_super_blocks_with_production_blocking,
        a_packed_column_window_has_the_bits_of_the_view_of_its_columns,
        a_large_panel_buffer_is_advised_for_huge_pages,
        the_prefetched_micro_panel_is_the_one_read_next,
    ]
    gemm_gemv: [
        chunks_cover_the_columns_and_balance_the_threads,
    ]
    gemm_pack: [
        every_layout_packs_the_same,
    ]
    gemm_ragged: [
        each_row_is_its_own_sequential_sum_on_every_isa,
    ]
    lanes: [
        first_n_sets_the_first_n_lanes_on_every_lane_type,
        round_even_and_scale_pow2_keep_the_spec_arithmetic_on_every_lane_type,
        madd_exact_product_is_the_product_and_the_sum_where_the_product_is_exact,
        partial_loads_and_stores_touch_only_their_lanes_on_every_lane_type,
        select_by_sign_follows_the_sign_bit_on_every_lane_type,
        mul_splat_is_the_product_with_the_splat_on_every_lane_type,
        transpose_square_moves_every_bit_on_every_lane_type,
        exact_pairs_6x2_are_the_generic_steps_on_every_lane_type,
        exact_tanh_in_range_gives_the_scalar_bits_up_to_a_lane_out_of_range,
        exact_horner_in_place_gives_the_scalar_bits_in_whole_blocks,
    ]
    lanes_core_kind: [
        family_adds_the_extended_family_only_to_family_15,
    ]
    lanes_pair: [
        pair_loads_stores_and_tests_both_halves,
    ]
    lanes_transpose: [
        every_row_count_length_and_stride_transposes,
    ]
    ops_erf: [
        the_regions_form_is_the_spec_form,
        clamp_by_min_is_the_select_form,
        the_fast_erf_clean_form_is_the_general_form,
        sorting_by_regions_changes_no_bit,
        constants_have_their_bit_patterns,
    ]
    ops_exp: [
        constants_have_their_bit_patterns,
        the_exponent_field_scale_is_the_product_wherever_the_callers_use_it,
        one_scale_path_equals_the_two_factor_form,
    ]
    ops_exp_taylor: [
        constants_have_their_bit_patterns,
        overflow_and_underflow_thresholds_are_the_logs_of_the_float_range,
        worked_example_steps,
        k_rounds_ties_to_even,
        specials,
        array_forms,
    ]
    ops_func: [
        a_group_gives_the_bits_of_its_registers_one_at_a_time,
        the_exact_tanh_slice_map_gives_the_scalar_bits,
        the_sigmoid_slice_maps_give_the_scalar_bits,
        the_fast_tanh_slice_map_gives_the_scalar_bits,
        sorted_kernels_give_the_scalar_bits_on_every_isa,
        both_avx2_exp_roundings_give_the_scalar_bits,
    ]
    ops_gelu: [
        the_exact_tanh_form_in_range_is_the_general_form,
        the_regions_form_is_the_spec_form,
        constants_have_their_bit_patterns,
    ]
    ops_log: [
        the_clean_form_is_the_general_form,
        constants_have_their_bit_patterns,
    ]
    ops_nan: [
        nan_payloads_and_inf_times_zero_become_canonical_in_exact_mode,
    ]
    ops_pooling: [
        huge_rows_normalise_as_small_ones_on_every_isa,
        zero_rows_stay_zero_and_nan_rows_are_canonical_nan,
    ]
    ops_reduce: [
        row_extremes_finds_both_anywhere_on_every_isa,
        canonical_sums_of_gives_each_sum_alone_on_every_isa,
    ]
    ops_sigmoid: [
        the_clean_form_is_the_clamped_form_and_the_flush_is_at_the_exp_limit,
        the_exact_in_range_form_is_the_general_form,
        the_sign_bit_form_is_the_spec_form,
    ]
    ops_silu: [
        the_exact_in_range_form_is_the_general_form,
    ]
    ops_softmax: [
        the_row_range_decision_changes_no_bit,
    ]
    ops_softmax_online: [
        keys_past_the_limit_are_not_read_and_change_no_bit,
        ragged_rows_give_the_bits_of_one_call_per_row,
        online_softmax_over_tiles_matches_the_two_pass_softmax_and_survives_masked_tiles,
    ]
    ops_softmax_scores: [
        scale_and_mask_masks_past_the_end_and_where_keep_is_false_on_every_isa,
        the_scale_in_the_exp_pass_gives_the_bits_of_a_scaling_pass,
    ]
    ops_tanh: [
        both_branches_in_one_pass_are_the_two_branch_form,
        the_stage_form_is_the_general_form,
        the_fast_tanh_clean_form_is_the_clamped_form,
        the_exact_in_range_form_is_the_general_form,
        constants_have_their_bit_patterns,
    ]
    row_buffer: [
        contiguous_f32_rows_are_used_in_place_and_others_go_through_a_buffer,
    ]
    session_attention: [
        a_decode_step_over_a_large_cache_is_parallel_work_and_a_small_one_is_not,
    ]
    session_matmul: [
        a_gemv_over_large_weights_is_parallel_work_and_a_small_one_is_not,
    ]
    session: [
        a_one_thread_session_stays_on_the_calling_thread,
    ]
    session_owned: [
        copies_equal_to_owned_and_impossible_sizes_are_errors,
    ]
    session_team: [
        dropping_the_last_session_ends_its_threads,
        pieces_cover_every_lane_once_in_order,
    ]
    session_thread_room: [
        the_limit_refuses_a_thread_only_past_it,
    ]
    session_traverse: [
        every_layout_and_split_gives_the_elements_of_the_contiguous_walk,
        rows_are_never_cut_in_any_layout_or_split,
    ]
    #[cfg(target_arch = "x86_64")]
    lanes_fpenv: [
        guard_sets_exact_bits_and_restores_the_callers,
        guard_restores_on_unwind,
        exact_scalar_keeps_subnormals_under_ftz,
    ]
    #[cfg(target_arch = "aarch64")]
    lanes_fpenv: [
        guard_clears_rounding_and_flushing_and_restores_the_callers_fpcr,
        guard_restores_on_unwind,
        exact_scalar_keeps_subnormals_under_fz,
    ]
}
