"""The conftest.py of bench_scale's projects (copied there, not imported by the
benchmark): every pytest process (the controller and each xdist worker) writes, at
unconfigure, its peak RSS, the CPU time the target spent in it, and the gate's own
parts: CPU and wall of loading the baseline, of the whole end of the run and of its
pieces, and the peak RSS above the process's RSS while the session concludes (the
kernel's high-water mark, reset when the end of the run begins)."""

import json
import os
import sys
import time

import pytest_ragdive.gate.preconditions as _pre
import pytest_ragdive.gate.rows as _rows
import pytest_ragdive.metrics.aggregate as _agg
import pytest_ragdive.plugin.session as _sess
import pytest_ragdive.reports.html as _html
import pytest_ragdive.reports.write as _write

# the gate's own share: CPU and wall of each part, and the peak RSS above the
# run's RSS while the session concludes (the kernel's high-water mark, reset first)
_gate = {"peak_kb": 0}



def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _timed(name, fn):
    def wrapper(*args, **kwargs):
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _gate[name + "_cpu"] = _gate.get(name + "_cpu", 0.0) + time.process_time() - c0
            _gate[name + "_wall"] = _gate.get(name + "_wall", 0.0) + time.perf_counter() - w0
    return wrapper


def _concluding(fn):
    timed = _timed("gate", fn)
    def wrapper(*args, **kwargs):
        _gate["peak_kb"] = max(_gate["peak_kb"], _status("VmHWM"))
        _gate["rss_before_kb"] = _status("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
        except OSError:
            pass
        try:
            return timed(*args, **kwargs)
        finally:
            hwm = _status("VmHWM")
            _gate["gate_peak_kb"] = hwm
            _gate["peak_kb"] = max(_gate["peak_kb"], hwm)
    return wrapper


def _loading(fn):
    timed = _timed("baseline", fn)
    def wrapper(*args, **kwargs):
        r0 = _status("VmRSS")
        try:
            return timed(*args, **kwargs)
        finally:
            _gate["baseline_kb"] = _status("VmRSS") - r0
    return wrapper


_sess.RagdiveSession.conclude = _concluding(_sess.RagdiveSession.conclude)
_pre.gate_baseline = _loading(_pre.gate_baseline)
_agg.aggregate = _timed("aggregate", _agg.aggregate)
_rows.check = _timed("check", _rows.check)
_write.write_reports = _timed("reports", _write.write_reports)
_html.write_html = _timed("html", _html.write_html)


def pytest_unconfigure(config):
    out = os.environ.get("BENCH_SCALE_OUT")
    if not out:
        return
    mod = sys.modules.get("bench_target")
    data = mod.spent() if mod is not None else {"cpu": 0.0, "calls": 0}
    data["maxrss_kb"] = max(_gate["peak_kb"], _status("VmHWM"))  # (the high-water mark may have been reset)
    data.update(_gate)
    with open(os.path.join(out, f"{os.getpid()}.json"), "w") as f:
        json.dump(data, f)
