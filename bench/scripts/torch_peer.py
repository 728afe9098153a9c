#!/usr/bin/env python3
"""PyTorch's torch.sort as a peer of `bitonic bench --compare`.

The `bitonic` binary embeds this file, writes it to a temporary directory and starts it
once per comparison run:

    python3 torch_peer.py --serve [--device N] [--backend torch|python] [--no-hold]

Protocol (one line per message, fields separated by tabs; every line this script writes
for the caller starts with "@bitonic", anything else on stdout is ignored by the caller):

  reply at start:  @bitonic  ready  <device name>  <total memory bytes>  <torch version>
              or:  @bitonic  unavailable  <why>          (then the script exits with 0)
  request:         sort  <key bits 32|64>  <values 0|1>  <n>  <cols>  <warmup>  <runs>
                         <input path>  <output path>
  reply:           @bitonic  ok  <ms of timed run 1> <ms of run 2> ...   (space-separated)
                         [<note>]    (optional: something the caller should show)
              or:  @bitonic  error  <message>
  request:         trip-pageable | trip-pinned   (the same fields as sort)
  reply:           as for sort
  request:         fsort | ftopk  <timing device|trip-pageable|trip-pinned>  <dtype float32|bfloat16>
                         <n>  <cols>  <k>  <warmup>  <runs>  <input path>  <output path>
  reply:           as for sort
  request:         quit

The input file holds n keys as little-endian signed words (int32 for 32-bit keys, int64
for 64-bit keys), then, with values, n int32 values. The caller has already mapped its
unsigned keys to signed ones by flipping the top bit, which keeps their order; it flips the
bit back in the sorted output. cols > 0 means n / cols rows of cols keys, each row sorted
on its own (torch.sort(dim=-1) on a rows x cols tensor); cols = 0 sorts the whole array.
The output file receives the sorted keys, then the values moved with them, in the same
layout. ms are the times of the timed runs, in order.

What is timed (torch backend), per run, between two torch.cuda.Event(enable_timing=True)
on the current stream: `torch.sort(keys, dim=-1)` (which always also returns int64
indices), and with values also `torch.gather(values, -1, indices)`. Before each run the
unsorted keys are restored device to device from a pristine copy, untimed. The data is
copied to the GPU once per request; `warmup` untimed runs come first.

The stream is held while a run is queued, as `bitonic` does for its own sorts and CUB's
(unless given --no-hold): `torch.cuda._sleep` queues a spinning kernel before the
start event, long enough for the host to queue the whole run behind it, so that the events
measure the GPU's work and not torch's host-side dispatch. If the start event has already
completed when the run is queued, the hold was too short: the next runs sleep twice as
long, and timed runs that were not held are counted in the reply's note. After a request its
tensors are freed and torch's cached memory is given back (torch.cuda.empty_cache()), so
that the other sorters of the comparison get the device memory back.

trip-pageable and trip-pinned time the host round trip instead, with the wall clock
(perf_counter) after a torch.cuda.synchronize(), `warmup` untimed runs first:
  trip-pageable: CPU tensors in ordinary memory, `.to(device)`, `torch.sort` (and the
                 gather), `.cpu()` of the results: what a torch user writes;
  trip-pinned:   CPU tensors in page-locked memory (`pin_memory=True`, filled untimed),
                 `.to(device, non_blocking=True)`, `torch.sort` (and the gather), then
                 `copy_(..., non_blocking=True)` into pinned result tensors allocated
                 untimed, and a torch.cuda.synchronize().
The output file receives the last run's result.

fsort and ftopk take float keys as their own bits (float32: 4 bytes, bfloat16: 2 bytes,
little-endian; no mapping), in n / cols rows of cols keys (cols = n: one row). fsort times
`torch.sort(keys, dim=-1)` on a tensor of that dtype and writes the sorted keys; ftopk times
`torch.topk(keys, k, dim=-1)` (the k largest of every row, sorted, as torch's defaults) and
writes the k values of every row, row after row (the indices are not written: torch does
not define which of equal keys it picks). With timing `device` they are timed as sort is
(CUDA events, the stream held); with trip-pageable and trip-pinned as the round trips above
(the keys uploaded, the op, its values copied back).

--backend python replaces torch by Python's own sorted() on the host (timed with
perf_counter): it exists to test the protocol and the caller without torch or a GPU.
--cpu-selftest runs that backend on random input through files and checks it.
"""

import array
import os
import random
import sys
import tempfile
import time
import traceback

TAG = "@bitonic"

# torch.cuda._sleep cycles that hold the stream while a run is queued: about 1 ms at 2 GHz
# to start with, doubled whenever that was too short, up to about 0.5 s.
INITIAL_SLEEP_CYCLES = 2_000_000
MAX_SLEEP_CYCLES = 1_000_000_000


def reply(*fields):
    """Writes one protocol line for the caller."""
    text = "\t".join([TAG] + [str(f).replace("\t", " ").replace("\n", " ") for f in fields])
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def read_exact(path, size):
    """The first `size` bytes of `path` as a bytearray; the file must be exactly that long."""
    have = os.path.getsize(path)
    if have != size:
        raise ValueError(f"{path}: {have} bytes, expected {size}")
    buf = bytearray(size)
    with open(path, "rb") as f:
        view = memoryview(buf)
        done = 0
        while done < size:
            got = f.readinto(view[done:])
            if not got:
                raise ValueError(f"{path}: ended after {done} of {size} bytes")
            done += got
    return buf


class Job:
    """One sort request."""

    def __init__(self, fields):
        if len(fields) != 8:
            raise ValueError(f"sort needs 8 fields, got {len(fields)}")
        self.bits = int(fields[0])
        self.with_values = fields[1] == "1"
        self.n = int(fields[2])
        self.cols = int(fields[3])
        self.warmup = int(fields[4])
        self.runs = int(fields[5])
        self.input = fields[6]
        self.output = fields[7]
        if self.bits not in (32, 64):
            raise ValueError(f"key bits must be 32 or 64, not {self.bits}")
        if self.n <= 0 or self.runs <= 0 or self.warmup < 0 or self.cols < 0:
            raise ValueError("n and runs must be positive, warmup and cols not negative")
        if self.cols and self.n % self.cols:
            raise ValueError(f"n = {self.n} is not a multiple of cols = {self.cols}")
        self.key_bytes = self.bits // 8

    def input_size(self):
        return self.n * (self.key_bytes + (4 if self.with_values else 0))


FLOAT_DTYPES = {"float32": 4, "bfloat16": 2}
FLOAT_TIMINGS = ("device", "trip-pageable", "trip-pinned")


class FloatJob:
    """One fsort or ftopk request."""

    def __init__(self, op, fields):
        if len(fields) != 9:
            raise ValueError(f"{op} needs 9 fields, got {len(fields)}")
        self.op = op
        self.timing = fields[0]
        self.dtype = fields[1]
        self.n = int(fields[2])
        self.cols = int(fields[3])
        self.k = int(fields[4])
        self.warmup = int(fields[5])
        self.runs = int(fields[6])
        self.input = fields[7]
        self.output = fields[8]
        if self.timing not in FLOAT_TIMINGS:
            raise ValueError(f"timing must be one of {FLOAT_TIMINGS}, not {self.timing!r}")
        if self.dtype not in FLOAT_DTYPES:
            raise ValueError(f"dtype must be float32 or bfloat16, not {self.dtype!r}")
        if self.n <= 0 or self.runs <= 0 or self.warmup < 0 or self.cols <= 0:
            raise ValueError("n, cols and runs must be positive, warmup not negative")
        if self.n % self.cols:
            raise ValueError(f"n = {self.n} is not a multiple of cols = {self.cols}")
        self.rows = self.n // self.cols
        if op == "ftopk" and not 1 <= self.k <= self.cols:
            raise ValueError(f"k = {self.k} must be between 1 and cols = {self.cols}")
        self.key_bytes = FLOAT_DTYPES[self.dtype]

    def input_size(self):
        return self.n * self.key_bytes

    def output_size(self):
        return (self.rows * self.k if self.op == "ftopk" else self.n) * self.key_bytes


class TorchBackend:
    """torch.sort on a CUDA device."""

    def __init__(self, ordinal, hold=True):
        import torch  # noqa: F401  (ImportError is reported as "unavailable")

        self.torch = torch
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"torch {torch.__version__} has no usable CUDA "
                f"(torch.version.cuda = {torch.version.cuda})"
            )
        count = torch.cuda.device_count()
        if ordinal >= count:
            raise RuntimeError(f"torch sees {count} CUDA device(s), not device {ordinal}")
        self.device = torch.device("cuda", ordinal)
        torch.cuda.set_device(self.device)
        torch.zeros(1, device=self.device)  # creates the context now, not in the first job
        props = torch.cuda.get_device_properties(self.device)
        self.name = props.name
        self.memory = props.total_memory
        self.version = f"{torch.__version__} (CUDA {torch.version.cuda})"
        # Holding the stream: see the module's docstring.
        self.sleep, self.hold_note = None, ""
        self.cycles = INITIAL_SLEEP_CYCLES
        if not hold:
            self.hold_note = "stream not held (--no-hold)"
        elif callable(getattr(torch.cuda, "_sleep", None)):
            self.sleep = torch.cuda._sleep
        else:
            self.hold_note = "stream not held (no torch.cuda._sleep)"

    def sort(self, job, keys_buf, values_buf):
        torch = self.torch
        key_dtype = torch.int32 if job.bits == 32 else torch.int64
        shape = (job.n // job.cols, job.cols) if job.cols else (job.n,)
        pristine = torch.frombuffer(keys_buf, dtype=key_dtype).to(self.device).view(shape)
        values = None
        if values_buf is not None:
            values = torch.frombuffer(values_buf, dtype=torch.int32).to(self.device).view(shape)
        work = torch.empty_like(pristine)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        times = []
        unheld = 0
        sorted_keys = indices = sorted_values = None
        for run in range(job.warmup + job.runs):
            # Drop the last run's outputs first, so that at most one set is alive.
            sorted_keys = indices = sorted_values = None
            work.copy_(pristine)  # untimed: ordered before `start` on the same stream
            if self.sleep is not None:
                self.sleep(self.cycles)  # holds the stream while the run is queued
            start.record()
            sorted_keys, indices = torch.sort(work, dim=-1)
            if values is not None:
                sorted_values = torch.gather(values, -1, indices)
            end.record()
            held = self.sleep is None or not start.query()
            end.synchronize()
            if not held:
                self.cycles = min(self.cycles * 2, MAX_SLEEP_CYCLES)
            if run >= job.warmup:
                times.append(start.elapsed_time(end))
                unheld += 0 if held else 1
        out = bytearray(job.input_size())
        torch.frombuffer(out, dtype=key_dtype, count=job.n).copy_(sorted_keys.reshape(-1))
        if values is not None:
            torch.frombuffer(
                out, dtype=torch.int32, count=job.n, offset=job.n * job.key_bytes
            ).copy_(sorted_values.reshape(-1))
        del pristine, values, work, sorted_keys, indices, sorted_values
        torch.cuda.empty_cache()
        note = self.hold_note
        if unheld:
            note = f"{unheld} of {job.runs} timed runs not held (launch latency included)"
        return times, out, note

    def trip(self, job, keys_buf, values_buf, pinned):
        torch = self.torch
        key_dtype = torch.int32 if job.bits == 32 else torch.int64
        shape = (job.n // job.cols, job.cols) if job.cols else (job.n,)
        columns = [(torch.frombuffer(keys_buf, dtype=key_dtype).view(shape), key_dtype)]
        if values_buf is not None:
            columns.append((torch.frombuffer(values_buf, dtype=torch.int32).view(shape), torch.int32))
        # The inputs, and with pinned memory also the result tensors, untimed.
        sources, results = [], []
        for host, dtype in columns:
            source = torch.empty(shape, dtype=dtype, pin_memory=pinned)
            source.copy_(host)
            sources.append(source)
            if pinned:
                results.append(torch.empty(shape, dtype=dtype, pin_memory=True))
        times = []
        out_tensors = None
        for run in range(job.warmup + job.runs):
            out_tensors = None
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            on_device = [s.to(self.device, non_blocking=pinned) for s in sources]
            sorted_keys, indices = torch.sort(on_device[0], dim=-1)
            sorted_all = [sorted_keys]
            if len(on_device) > 1:
                sorted_all.append(torch.gather(on_device[1], -1, indices))
            if pinned:
                for result, d in zip(results, sorted_all):
                    result.copy_(d, non_blocking=True)
                torch.cuda.synchronize()
                out_tensors = results
            else:
                out_tensors = [d.cpu() for d in sorted_all]
            ms = (time.perf_counter() - t0) * 1e3
            del on_device, sorted_keys, indices, sorted_all
            if run >= job.warmup:
                times.append(ms)
        out = bytearray(job.input_size())
        torch.frombuffer(out, dtype=key_dtype, count=job.n).copy_(out_tensors[0].reshape(-1))
        if values_buf is not None:
            torch.frombuffer(
                out, dtype=torch.int32, count=job.n, offset=job.n * job.key_bytes
            ).copy_(out_tensors[1].reshape(-1))
        del sources, results, out_tensors, columns
        torch.cuda.empty_cache()
        return times, out, ""

    def float_op(self, job, keys_buf):
        """fsort or ftopk, timed as job.timing says; returns times, output bytes, note."""
        torch = self.torch
        dtype = torch.float32 if job.dtype == "float32" else torch.bfloat16
        shape = (job.rows, job.cols)
        host = torch.frombuffer(keys_buf, dtype=dtype).view(shape)

        def op(keys):
            if job.op == "ftopk":
                return torch.topk(keys, job.k, dim=-1).values
            return torch.sort(keys, dim=-1).values

        times, unheld, result = [], 0, None
        if job.timing == "device":
            pristine = host.to(self.device)
            work = torch.empty_like(pristine)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            for run in range(job.warmup + job.runs):
                result = None
                work.copy_(pristine)  # untimed: ordered before `start` on the same stream
                if self.sleep is not None:
                    self.sleep(self.cycles)
                start.record()
                result = op(work)
                end.record()
                held = self.sleep is None or not start.query()
                end.synchronize()
                if not held:
                    self.cycles = min(self.cycles * 2, MAX_SLEEP_CYCLES)
                if run >= job.warmup:
                    times.append(start.elapsed_time(end))
                    unheld += 0 if held else 1
            del pristine, work
        else:
            pinned = job.timing == "trip-pinned"
            source = torch.empty(shape, dtype=dtype, pin_memory=pinned)
            source.copy_(host)
            out_shape = (job.rows, job.k) if job.op == "ftopk" else shape
            landing = torch.empty(out_shape, dtype=dtype, pin_memory=True) if pinned else None
            for run in range(job.warmup + job.runs):
                result = None
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                on_device = source.to(self.device, non_blocking=pinned)
                values = op(on_device)
                if pinned:
                    landing.copy_(values, non_blocking=True)
                    torch.cuda.synchronize()
                    result = landing
                else:
                    result = values.cpu()
                ms = (time.perf_counter() - t0) * 1e3
                del on_device, values
                if run >= job.warmup:
                    times.append(ms)
            del source
        out = bytearray(job.output_size())
        count = job.output_size() // job.key_bytes
        torch.frombuffer(out, dtype=dtype, count=count).copy_(result.reshape(-1).cpu())
        del result, host
        torch.cuda.empty_cache()
        note = self.hold_note if job.timing == "device" else ""
        if unheld:
            note = f"{unheld} of {job.runs} timed runs not held (launch latency included)"
        return times, out, note

    def release(self):
        self.torch.cuda.empty_cache()


class PythonBackend:
    """Python's sorted() on the host: the protocol without torch (tests only)."""

    name = "python sorted() on the host (protocol test)"
    memory = 0
    version = "none"

    def sort(self, job, keys_buf, values_buf):
        code = "i" if job.bits == 32 else "q"
        keys = array.array(code)
        if keys.itemsize != job.key_bytes:
            raise RuntimeError(f"array type {code} has {keys.itemsize} bytes")
        keys.frombytes(bytes(keys_buf))
        values = None
        if values_buf is not None:
            values = array.array("i")
            values.frombytes(bytes(values_buf))
        width = job.cols or job.n
        times = []
        for run in range(job.warmup + job.runs):
            t0 = time.perf_counter()
            out_keys = array.array(code)
            out_values = array.array("i")
            for lo in range(0, job.n, width):
                row = range(lo, lo + width)
                order = sorted(row, key=keys.__getitem__)
                out_keys.extend(keys[i] for i in order)
                if values is not None:
                    out_values.extend(values[i] for i in order)
            ms = (time.perf_counter() - t0) * 1e3
            if run >= job.warmup:
                times.append(ms)
        out = bytearray(out_keys.tobytes())
        if values is not None:
            out += out_values.tobytes()
        return times, out, os.environ.get("BITONIC_TORCH_PEER_TEST_NOTE", "")

    def trip(self, job, keys_buf, values_buf, pinned):
        return self.sort(job, keys_buf, values_buf)

    def float_op(self, job, keys_buf):
        """fsort or ftopk with Python floats (bfloat16 widened to float32 bits and back)."""
        raw = bytes(keys_buf)
        if job.dtype == "float32":
            keys = list(array.array("f", raw))
        else:
            halves = array.array("H", raw)
            keys = list(array.array("f", array.array("I", (h << 16 for h in halves)).tobytes()))
        times = []
        out_keys = []
        for run in range(job.warmup + job.runs):
            t0 = time.perf_counter()
            out_keys = []
            for lo in range(0, job.n, job.cols):
                row = keys[lo : lo + job.cols]
                if job.op == "ftopk":
                    out_keys.extend(sorted(row, reverse=True)[: job.k])
                else:
                    out_keys.extend(sorted(row))
            ms = (time.perf_counter() - t0) * 1e3
            if run >= job.warmup:
                times.append(ms)
        packed = array.array("f", out_keys)
        if job.dtype == "bfloat16":
            packed = array.array("H", (w >> 16 for w in array.array("I", packed.tobytes())))
        return times, bytearray(packed.tobytes()), ""

    def release(self):
        pass


REQUESTS = ("sort", "trip-pageable", "trip-pinned")
FLOAT_REQUESTS = ("fsort", "ftopk")


def run_float_job(backend, op, fields):
    job = FloatJob(op, fields)
    buf = read_exact(job.input, job.input_size())
    times, out, note = backend.float_op(job, memoryview(buf))
    del buf
    if len(out) != job.output_size():
        raise RuntimeError(f"{len(out)} output bytes, expected {job.output_size()}")
    with open(job.output, "wb") as f:
        f.write(out)
    return times, note


def run_job(backend, fields, request="sort"):
    job = Job(fields)
    buf = read_exact(job.input, job.input_size())
    keys_buf = memoryview(buf)[: job.n * job.key_bytes]
    values_buf = memoryview(buf)[job.n * job.key_bytes :] if job.with_values else None
    if request == "sort":
        times, out, note = backend.sort(job, keys_buf, values_buf)
    else:
        times, out, note = backend.trip(job, keys_buf, values_buf, request == "trip-pinned")
    del keys_buf, values_buf, buf
    if len(out) != job.input_size():
        raise RuntimeError(f"{len(out)} output bytes, expected {job.input_size()}")
    with open(job.output, "wb") as f:
        f.write(out)
    return times, note


def serve(backend_name, ordinal, hold):
    if sys.byteorder != "little":
        reply("unavailable", "the file protocol is little-endian; this host is not")
        return 0
    try:
        backend = PythonBackend() if backend_name == "python" else TorchBackend(ordinal, hold)
    except ImportError as e:
        reply("unavailable", f"no torch in {sys.executable}: {e}")
        return 0
    except Exception as e:  # noqa: BLE001  (any failure to start is a note, not a crash)
        reply("unavailable", f"{type(e).__name__}: {e}")
        return 0
    reply("ready", backend.name, backend.memory, backend.version)
    for line in sys.stdin:
        fields = line.rstrip("\n").split("\t")
        if fields == ["quit"] or fields == [""]:
            break
        if fields[0] not in REQUESTS + FLOAT_REQUESTS:
            reply("error", f"unknown request {fields[0]!r}")
            continue
        failure = None
        try:
            if fields[0] in FLOAT_REQUESTS:
                times, note = run_float_job(backend, fields[0], fields[1:])
            else:
                times, note = run_job(backend, fields[1:], fields[0])
        except Exception as e:  # noqa: BLE001  (reported to the caller, which goes on)
            traceback.print_exc(file=sys.stderr)
            failure = f"{type(e).__name__}: {e}"
        if failure is None:
            timed = " ".join(repr(float(t)) for t in times)
            if note:
                reply("ok", timed, note)
            else:
                reply("ok", timed)
            continue
        # Outside the except block, so that the traceback no longer holds the tensors.
        try:
            backend.release()
        except Exception:  # noqa: BLE001
            pass
        reply("error", failure)
    return 0


def cpu_selftest():
    """Runs the python backend through the file protocol on random input and checks it."""
    rng = random.Random(7)
    backend = PythonBackend()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(32, False, 1000, 0), (32, True, 777, 0), (64, False, 500, 0), (32, False, 640, 64)]
        for bits, with_values, n, cols in cases:
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            keys = array.array("i" if bits == 32 else "q", (rng.randint(lo, hi) for _ in range(n)))
            values = array.array("i", range(n))
            src, dst = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
            with open(src, "wb") as f:
                f.write(keys.tobytes() + (values.tobytes() if with_values else b""))
            fields = [str(bits), "1" if with_values else "0", str(n), str(cols), "1", "2", src, dst]
            times, _ = run_job(backend, fields)
            assert len(times) == 2
            out = array.array(keys.typecode)
            raw = read_exact(dst, n * (bits // 8 + (4 if with_values else 0)))
            out.frombytes(bytes(raw[: n * (bits // 8)]))
            width = cols or n
            want = []
            for r in range(0, n, width):
                want.extend(sorted(keys[r : r + width]))
            assert list(out) == want, f"keys wrong for {bits}, {with_values}, {n}, {cols}"
            if with_values:
                got_values = array.array("i")
                got_values.frombytes(bytes(raw[n * (bits // 8) :]))
                assert sorted(got_values) == list(range(n)), "values are not a permutation"
                assert all(keys[v] == k for k, v in zip(out, got_values)), "values misplaced"
            print(f"ok: bits={bits} values={with_values} n={n} cols={cols}")
        for op, dtype, n, cols, k in [("fsort", "float32", 600, 60, 0), ("ftopk", "bfloat16", 640, 64, 5)]:
            floats = [rng.uniform(-8.0, 8.0) for _ in range(n)]
            bits32 = array.array("I", array.array("f", floats).tobytes())
            if dtype == "bfloat16":
                raw = array.array("H", (w >> 16 for w in bits32)).tobytes()
                floats = list(array.array("f", array.array("I", ((w >> 16) << 16 for w in bits32)).tobytes()))
            else:
                raw = bits32.tobytes()
                floats = list(array.array("f", raw))
            src, dst = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
            with open(src, "wb") as f:
                f.write(raw)
            fields = ["device", dtype, str(n), str(cols), str(k), "0", "1", src, dst]
            times, _ = run_float_job(backend, op, fields)
            assert len(times) == 1
            width = FLOAT_DTYPES[dtype]
            out_len = (n // cols) * k if op == "ftopk" else n
            got = read_exact(dst, out_len * width)
            if dtype == "bfloat16":
                got = array.array("f", array.array("I", (h << 16 for h in array.array("H", bytes(got)))).tobytes())
            else:
                got = array.array("f", bytes(got))
            want = []
            for r in range(0, n, cols):
                row = floats[r : r + cols]
                want.extend(sorted(row, reverse=True)[:k] if op == "ftopk" else sorted(row))
            assert list(got) == want, f"{op} {dtype} wrong"
            print(f"ok: {op} {dtype} n={n} cols={cols} k={k}")
    return 0


def main(argv):
    backend, ordinal, mode, hold = "torch", 0, None, True
    it = iter(argv)
    for arg in it:
        if arg in ("--serve", "--cpu-selftest"):
            mode = arg
        elif arg == "--backend":
            backend = next(it, "")
            if backend not in ("torch", "python"):
                print(f"--backend {backend!r}: use torch or python", file=sys.stderr)
                return 2
        elif arg == "--device":
            ordinal = int(next(it, "0"))
        elif arg == "--no-hold":
            hold = False
        else:
            print(f"unknown argument {arg!r}\n{__doc__}", file=sys.stderr)
            return 2
    if mode == "--serve":
        return serve(backend, ordinal, hold)
    if mode == "--cpu-selftest":
        return cpu_selftest()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
