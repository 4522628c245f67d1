//! Every function, in both modes, on every available instruction set equals the scalar path
//! bit for bit: special values, every 4099th bit pattern, runs over [-16, 16] and near the
//! overflow and underflow edges, every slice length up to 40 at odd offsets, in place and out
//! of place. By default every 7th digest input and every 2053rd float of [-16, 16] (about a
//! million); `AK_EXTENSIVE=1` takes every digest input and every 64th float there (34 million).
//! The exhaustive test (`exhaustive.rs`, ignored) covers all 2^32 inputs.

use crate::common::*;
use activation_kernels::{Func, Isa};

fn inputs() -> Vec<f32> {
    let mut x = special_values();
    let (step, dense) = if extensive() { (1, 64) } else { (7, 2053) };
    x.extend(digest_inputs().into_iter().step_by(step));
    x.extend(float_range(-16.0, 16.0, dense));
    x.extend(float_range(-110.0, -80.0, 997));
    x.extend(float_range(80.0, 90.0, 997));
    x
}

#[test]
fn every_isa_equals_scalar_on_specials_digest_inputs_and_dense_runs() {
    let x = inputs();
    let mut want = vec![0f32; x.len()];
    let mut got = vec![0f32; x.len()];
    for (mode, map, _) in modes() {
        for func in Func::ALL {
            map(func, Isa::Scalar, &x, &mut want).unwrap();
            for isa in Isa::available() {
                map(func, isa, &x, &mut got).unwrap();
                let diff = first_difference(&x, &want, &got);
                assert!(diff.is_none(), "{mode} {func} on {isa}: {}", diff.unwrap());
            }
        }
    }
}

#[test]
fn every_length_and_offset_in_and_out_of_place_equals_scalar() {
    // Values that take every branch of every function, including specials.
    let pool: Vec<f32> = special_values()
        .into_iter()
        .chain(float_range(-12.0, 12.0, 1 << 19))
        .collect();
    for (mode, map, map_in_place) in modes() {
        for func in Func::ALL {
            for offset in [0usize, 1, 3, 7] {
                for len in 0..=40usize {
                    let src: Vec<f32> = (0..offset + len)
                        .map(|i| pool[(i * 7 + len) % pool.len()])
                        .collect();
                    let src = &src[offset..];
                    let want: Vec<f32> = {
                        let mut w = vec![0f32; len];
                        for (w, &s) in w.iter_mut().zip(src) {
                            let mut one = [0f32];
                            map(func, Isa::Scalar, &[s], &mut one).unwrap();
                            *w = one[0];
                        }
                        w
                    };
                    for isa in Isa::available() {
                        let mut out = vec![f32::NAN; offset + len + 1];
                        map(func, isa, src, &mut out[offset..offset + len]).unwrap();
                        let d = first_difference(src, &want, &out[offset..offset + len]);
                        assert!(
                            d.is_none(),
                            "{mode} {func} {isa} len {len} off {offset}: {}",
                            d.unwrap()
                        );
                        assert!(out[offset + len].is_nan(), "wrote past the end");

                        let mut buf = vec![0f32; offset + len];
                        buf[offset..].copy_from_slice(src);
                        map_in_place(func, isa, &mut buf[offset..]).unwrap();
                        let d = first_difference(src, &want, &buf[offset..]);
                        assert!(
                            d.is_none(),
                            "{mode} {func} {isa} in place len {len}: {}",
                            d.unwrap()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn nan_inputs_give_the_canonical_nan_in_both_modes() {
    let nans: Vec<f32> = [
        0x7FC0_0000u32,
        0xFFC0_0000,
        0x7F80_0001,
        0xFF80_0001,
        0x7FA5_A5A5,
        0xFFFF_FFFF,
    ]
    .into_iter()
    .map(f32::from_bits)
    .collect();
    let mut y = vec![0f32; nans.len()];
    for (mode, map, _) in modes() {
        for func in Func::ALL {
            for isa in Isa::available() {
                map(func, isa, &nans, &mut y).unwrap();
                assert!(
                    y.iter().all(|v| v.to_bits() == 0x7FC0_0000),
                    "{mode} {func} {isa}: {y:?}"
                );
            }
        }
    }
}

#[test]
fn length_mismatch_and_unavailable_isa_are_errors() {
    use activation_kernels::{Error, exact, fast};
    let x = [1.0f32; 4];
    let mut y = [0f32; 3];
    assert_eq!(
        exact::map(Func::Exp, Isa::Scalar, &x, &mut y),
        Err(Error::LengthMismatch { src: 4, dst: 3 })
    );
    assert!(matches!(
        fast::map(Func::Exp, Isa::Scalar, &x, &mut y),
        Err(Error::LengthMismatch { .. })
    ));
    for isa in Isa::ALL.into_iter().filter(|i| !i.is_available()) {
        let mut y = [0f32; 4];
        let e = exact::map(Func::Exp, isa, &x, &mut y).unwrap_err();
        assert_eq!(e, Error::IsaUnavailable { isa });
        assert!(e.to_string().contains(isa.name()));
        assert_eq!(y, [0f32; 4], "nothing written on error");
    }
    assert!(matches!(
        "avx1024".parse::<Isa>(),
        Err(Error::UnknownIsa { .. })
    ));
    assert_eq!("AVX2".parse::<Isa>(), Ok(Isa::Avx2));
}
