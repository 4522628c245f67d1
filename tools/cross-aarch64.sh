#!/usr/bin/env bash
# aarch64 under emulation: cross-builds the crate for aarch64-unknown-linux-gnu and runs under
# qemu-aarch64 what shows that NEON gives exact mode's bits there:
#   * the golden vectors, the cross-ISA sweep, the floating-point environment (FPCR) tests,
#     the GEMM, GEMV and packed-matrix tests, the register transposes and the forced
#     instruction set (`--test it`, whose `unit::` tests are the library's unit tests: those
#     the filters below name run too);
#   * the digest example on scalar code and NEON: every exact and fast line must be x86-64's
#     (tests/data/digest_x86_64.txt);
#   * the transformer block's exact digest on NEON at 1 and 2 threads: the README's;
#   * the C interface test, its C program built by the cross compiler and run under qemu.
# A differing bit fails the script. Emulated time means nothing, so nothing here is timed.
#
# It installs what it needs (Debian's gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and
# qemu-user; the rustup target) and skips, loudly, only when that cannot be done.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu
# The README's "SHA-256 of the exact output" of the transformer block.
BLOCK_DIGEST=2ec91a4daf8c2434bb333aa12f0c846fa898698e8d1aa30d0091ad433c74a177

skip() {
  printf '\n*** SKIPPED: aarch64 cross test (%s) ***\n\n' "$1" >&2
  exit 0
}
fail() {
  printf '\n*** FAILED: aarch64 cross test: %s ***\n\n' "$1" >&2
  exit 1
}
step() { printf '\n== aarch64: %s\n' "$1"; }

have_toolchain() {
  command -v aarch64-linux-gnu-gcc && command -v qemu-aarch64 && [ -e "$SYSROOT/lib/libc.so.6" ]
} >/dev/null 2>&1

if ! have_toolchain; then
  sudo=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  if command -v apt-get >/dev/null 2>&1; then
    $sudo apt-get update || true
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y \
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user || true
  fi
  have_toolchain || skip "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user could not be installed"
fi
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$TARGET" ]; then
  rustup target add "$TARGET" || skip "rustup could not add the target $TARGET"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $SYSROOT"
cross=(--release --target "$TARGET" -p activation-kernels)

step "integration tests: golden vectors, cross-ISA sweep, FPCR, GEMM, GEMV, packed, transposes, forced ISA, C interface"
# The C program is built by the cross compiler and run by qemu. LeakSanitizer stops the world
# the way a debugger does, which qemu-user cannot host: AddressSanitizer runs without it here.
CC=aarch64-linux-gnu-gcc AK_CAPI_TARGET="$TARGET" \
  AK_CAPI_RUNNER="$CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER" ASAN_OPTIONS=detect_leaks=0 \
  cargo test "${cross[@]}" --test it -- \
  exact_golden cross_isa fp_environment gemm gemv packed transpose_square capi

step "ACTIVATION_KERNELS_ISA forces the instruction set"
# The test runs itself as a child per value, which qemu-user cannot start (the kernel does not
# run an aarch64 executable without binfmt_misc): here each value is its child's run, as the
# parent would start it.
for case in neon:neon scalar:scalar avx2:error nonsense:error; do
  ACTIVATION_KERNELS_ISA="${case%%:*}" ACTIVATION_KERNELS_TEST_EXPECT="${case#*:}" \
    cargo test -q "${cross[@]}" --test it -- --exact isa_env::environment_variable_forces_the_isa
done

step "digest example, scalar and NEON, against x86-64's lines"
out=$(cargo run -q "${cross[@]}" --example digest -- --isa scalar,neon)
echo "$out"
grep -q "detected instruction set: neon" <<<"$out" || fail "NEON is not the detected instruction set"
if grep -q DIFFERS <<<"$out"; then fail "NEON's digests differ from scalar code's"; fi
got=$(grep -E '^(exact|fast) +[a-z_]+ +[0-9a-f]{64}' <<<"$out" | awk '{print $1, $2, $3}')
want=$(grep -v '^#' tests/data/digest_x86_64.txt)
if [ "$got" != "$want" ]; then
  diff <(echo "$want") <(echo "$got") >&2 || true
  fail "the digest example's lines are not x86-64's (tests/data/digest_x86_64.txt)"
fi
echo "every exact and fast line equals x86-64's"

for threads in 1 2; do
  step "transformer block, exact mode on NEON, $threads thread(s)"
  out=$(cargo run -q "${cross[@]}" --example transformer_block -- \
    --mode exact --isa neon --threads "$threads" --reps 1 --no-reference)
  grep -i "sha-256" <<<"$out" || true
  grep -q "SHA-256 of the exact output: $BLOCK_DIGEST" <<<"$out" ||
    fail "the block's exact digest at $threads thread(s) is not the README's $BLOCK_DIGEST"
done

printf '\naarch64 under qemu: every bit as on x86-64.\n'
