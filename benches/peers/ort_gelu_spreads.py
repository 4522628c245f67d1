"""ONNX Runtime's erf GELU (`Gelu`, opset 20, approximate="none") on the three input spreads of
the crate's kernels bench: uniform on [-8, 8] and normal of spread 0.5 and 1.5, 1,048,576 f32,
one thread, io_binding with a preallocated output (`run.py`'s session and runner). Prints the
median ns per element of 7 timed runs of 20 calls each, after 20 warm-up calls.

    benches/peers/.venv/bin/python benches/peers/ort_gelu_spreads.py

Compare with `cargo bench --bench kernels -- 'gelu_erf/1048576/(normal|exact)'` run beside it.
The samples differ from the bench's (numpy's generator here), not the distributions.
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

N = 1 << 20


def main():
    rng = np.random.default_rng(7)
    sess = run.ort_session(run.make_model("Gelu", "", {"approximate": "none"}))
    spreads = [
        ("uniform[-8,8]", rng.uniform(-8, 8, N).astype(np.float32)),
        ("normal-0.5", (rng.standard_normal(N) * 0.5).astype(np.float32)),
        ("normal-1.5", (rng.standard_normal(N) * 1.5).astype(np.float32)),
    ]
    for name, x in spreads:
        y = np.empty_like(x)
        call = run.ort_bound_runner(sess, x, y)
        for _ in range(20):
            call()
        # ORT computes the erf GELU: a sample against the float64 reference.
        sample = x[:1000].astype(np.float64)
        err = np.max(np.abs(y[:1000] - run.ref_gelu_erf(sample)))
        assert err < 1e-5, f"{name}: ORT's Gelu is off by {err}"
        times = []
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(20):
                call()
            times.append((time.perf_counter() - t) / 20)
        print(f"ORT Gelu-20 {name}: {statistics.median(times) / N * 1e9:.3f} ns/elem")


if __name__ == "__main__":
    main()
