#!/usr/bin/env python3
"""craft_probe.py CACHE_DIR CLASS: makes the probe cached in CACHE_DIR describe a
machine of CLASS, so a CLI test holds the same on every CPU.

  CLASS        what the crafted machine has
  avx2         AVX2 + FMA, no int8 dot products, no tiles (an AMD Zen 3)
  avx512_vnni  AVX-512 with VNNI int8 dot products, no tiles (an AMD Zen 4/5)
  amx          AVX-512 VNNI and AMX int8 tiles (an Intel Xeon of 2023 on)

The cache file must exist (run any tokmeter command that probes first): its
name, the machine's identity (CPU model, CPUs, memory) and the probe's own
bookkeeping (quick, read loop, thread range, time) stay as measured, since
tokmeter checks them before it uses a cache. Every rate (read and copy
bandwidth, f32, int8 and int8-tile compute, at each thread count) and the
CPU flags are replaced by the class's round figures below, chosen here and
never read from this CPU. The figures are printed as JSON on stdout, for the
test's own arithmetic.

  read bandwidth   20 GB/s x threads, copy (read + write) 16 GB/s x threads
  f32 FMA          avx2 100 GFLOP/s x threads, the AVX-512 classes 200
  int8 dot         the AVX-512 classes 800 GOPS x threads (path avx512_vnni)
  int8 tiles       amx 6.5 TOPS x threads (path amx_int8)
"""
import glob
import json
import sys

CLASSES = ("avx2", "avx512_vnni", "amx")
FLAGS = {
    "avx2": ["avx", "avx2", "fma", "f16c"],
    "avx512_vnni": ["avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                    "avx512_vnni"],
    "amx": ["avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
            "amx_tile", "amx_int8"],
}
READ, COPY = 20e9, 16e9
F32 = {"avx2": 100e9, "avx512_vnni": 200e9, "amx": 200e9}
INT8 = {"avx2": None, "avx512_vnni": 800e9, "amx": 800e9}
TILES = {"avx2": None, "avx512_vnni": None, "amx": 6.5e12}


def int_rate(p, key, path, per_thread, threads):
    """The probe's int8 (key "int8") or int8-tile ("int8_tile") figures: its
    path, the rate at each thread count, the best and where; all null (and no
    series) when per_thread is None, as a probe of a CPU without them."""
    top = threads[-1]
    by = [{"threads": t, "ops_s": per_thread * t} for t in threads] if per_thread else []
    p[key + "_path"] = path if per_thread else None
    p["compute_%s_by_threads" % key] = by
    p["compute_%s_ops" % key] = per_thread * top if per_thread else None
    p["compute_%s_threads" % key] = top if per_thread else None


def craft(p, cls):
    threads = list(range(1, int(p["max_threads"]) + 1))
    top = threads[-1]
    p["read_bandwidth_by_threads"] = [{"threads": t, "bytes_s": READ * t} for t in threads]
    p["read_bandwidth_bytes_s"], p["read_bandwidth_threads"] = READ * top, top
    p["copy_bandwidth_by_threads"] = [{"threads": t, "read_plus_write_bytes_s": COPY * t}
                                      for t in threads]
    p["copy_bandwidth_read_plus_write_bytes_s"] = COPY * top
    p["mem_path"] = "avx2" if cls == "avx2" else "avx512f"
    p["f32_path"] = "avx2+fma" if cls == "avx2" else "avx512f"
    p["compute_f32_by_threads"] = [{"threads": t, "flops": F32[cls] * t} for t in threads]
    p["compute_f32_flops"], p["compute_f32_threads"] = F32[cls] * top, top
    int_rate(p, "int8", "avx512_vnni", INT8[cls], threads)
    int_rate(p, "int8_tile", "amx_int8", TILES[cls], threads)
    p["machine"]["flags"] = FLAGS[cls]
    return p


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CLASSES:
        sys.exit("usage: craft_probe.py CACHE_DIR avx2|avx512_vnni|amx")
    files = glob.glob(sys.argv[1] + "/probe-*.json")
    if len(files) != 1:
        sys.exit("craft_probe.py: want one cached probe in %s, found %d (run a tokmeter command "
                 "that probes first)" % (sys.argv[1], len(files)))
    p = craft(json.load(open(files[0])), sys.argv[2])
    with open(files[0], "w") as f:
        json.dump(p, f)
    json.dump({"class": sys.argv[2], "max_threads": p["max_threads"], "read_per_thread": READ,
               "f32_per_thread": F32[sys.argv[2]], "int8_per_thread": INT8[sys.argv[2]],
               "tiles_per_thread": TILES[sys.argv[2]]}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
