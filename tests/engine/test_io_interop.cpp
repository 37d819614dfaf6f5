// safetensors interop with Python: PyTorch (python3-torch) reads the C++ file into torch
// tensors and writes one from torch tensors, and a reader/writer in plain Python (json +
// struct) checks the byte layout; both follow the published format, independent of the C++
// code. (Debian 12 has no python3-safetensors, so the format is read and written by hand.)
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/engine/test_util.h"
#include "engine/core/ops.h"
#include "engine/io/safetensors.h"
#include "tests/common/test_deps.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::io;
namespace fs = std::filesystem;

namespace {

// Debian's python3, where python3-torch installs torch (not whichever python3 comes first in PATH).
const std::string kPython = "/usr/bin/python3";

bool python_has(const std::string& module) {
  return std::system((kPython + " -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
}

int run_python(const TempDir& dir, const std::string& script, const std::string& args) {
  std::ofstream(dir / "check.py") << script;
  return std::system((kPython + " " + dir / "check.py" + " " + args).c_str());
}

NamedTensors cpp_tensors() {
  Tensor m = Tensor::arange(0, 6, 1, DType::f32).reshape({2, 3});
  return {{"f32", m},
          {"f64_t", m.to(DType::f64).t()},
          {"f16", (m * 0.5).to(DType::f16)},
          {"bf16", (m - 2.0).to(DType::bf16)},
          {"i64", m.to(DType::i64) - Tensor::scalar(3, DType::i64)},
          {"i32", m.to(DType::i32)},
          {"u8", (m * 40.0).to(DType::u8)},
          {"i8", (m - 3.0).to(DType::i8)},
          {"bool", gt(m, Tensor::scalar(2.0))}};
}

void check_python_file(const std::string& path) {
  SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.metadata.at("from"), "python");
  std::map<std::string, Tensor> t(f.tensors.begin(), f.tensors.end());
  EXPECT_EQ(t.at("w").dtype(), DType::f32);
  EXPECT_EQ(t.at("w").shape(), (Shape{2, 2}));
  EXPECT_EQ(t.at("w").to_vector<float>(), (std::vector<float>{1.5f, -2, 0.25f, 8}));
  EXPECT_EQ(t.at("ids").to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1LL << 40}));
  EXPECT_EQ(t.at("h").dtype(), DType::f16);
  EXPECT_EQ(t.at("h").to_vector<float>(), (std::vector<float>{1, -0.5f}));
  EXPECT_EQ(t.at("mask").to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

}  // namespace

TEST(SafetensorsInterop, PyTorch) {
  KILN_SKIP_UNLESS_DEP(python_has("torch"), "python3-torch", "python3 cannot import torch");
  TempDir dir("kiln-interop");
  save_safetensors(dir / "cpp.safetensors", cpp_tensors(), {{"from", "c++"}});
  // PyTorch reads the C++ file (torch.frombuffer on the byte buffer) and writes one laid out as
  // safetensors.torch.save_file does: the format by hand, as Debian 12 has no python3-safetensors.
  const char* script = R"PY(
import json, struct, sys, torch
DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
def load(path):
    raw = bytearray(open(path, "rb").read())
    n, = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        dtype = DTYPES[e["dtype"]]
        b, end = e["data_offsets"]
        size = torch.empty(0, dtype=dtype).element_size()
        assert (8 + n + b) % size == 0, ("unaligned", name, 8 + n + b)
        out[name] = torch.frombuffer(raw, dtype=dtype, count=(end - b) // size, offset=8 + n + b).reshape(e["shape"])
    return out, metadata
def save(path, tensors, metadata):
    names = {v: k for k, v in DTYPES.items()}
    hdr, data = {"__metadata__": metadata}, b""
    for name in sorted(tensors, key=lambda k: (-tensors[k].element_size(), k)):
        t = tensors[name].contiguous()
        b = t.view(torch.uint8).numpy().tobytes()
        hdr[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(hdr, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
d, metadata = load(sys.argv[1])
assert metadata == {"from": "c++"}, metadata
m = torch.arange(6, dtype=torch.float32).reshape(2, 3)
want = {"f32": m, "f64_t": m.double().t(), "f16": (m * 0.5).half(), "bf16": (m - 2).bfloat16(),
        "i64": m.long() - 3, "i32": m.int(), "u8": (m * 40).to(torch.uint8), "i8": (m - 3).to(torch.int8),
        "bool": m > 2}
assert set(d) == set(want), sorted(d)
for k, v in want.items():
    assert d[k].dtype == v.dtype and torch.equal(d[k], v), (k, d[k], v)
save(sys.argv[2], {"w": torch.tensor([[1.5, -2], [0.25, 8]]), "ids": torch.tensor([-1, 0, 1 << 40]),
                   "h": torch.tensor([1, -0.5]).half(), "mask": torch.tensor([True, False, True]),
                   "b": torch.tensor([0.1, -3]).bfloat16()}, {"from": "python"})
)PY";
  ASSERT_EQ(run_python(dir, script, dir / "cpp.safetensors " + dir / "py.safetensors"), 0);
  check_python_file(dir / "py.safetensors");
  SafetensorsFile f = load_safetensors(dir / "py.safetensors");
  std::map<std::string, Tensor> t(f.tensors.begin(), f.tensors.end());
  ASSERT_EQ(t.at("b").dtype(), DType::bf16);
  EXPECT_EQ(t.at("b").to_vector<float>(), (std::vector<float>{0.10009765625f, -3}));  // torch's bf16 rounding of 0.1
}

TEST(SafetensorsInterop, PlainPythonFormat) {
  KILN_SKIP_UNLESS_DEP(python_has("json"), "python3", "no " + kPython);
  TempDir dir("kiln-interop");
  save_safetensors(dir / "cpp.safetensors", cpp_tensors(), {{"from", "c++"}});
  // Reads the C++ file by the published rules, then writes one the way the Python library does.
  const char* script = R"PY(
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n, = struct.unpack("<Q", raw[:8])
assert n % 8 == 0 and raw[8:9] == b"{"
header = json.loads(raw[8:8 + n])
buf = raw[8 + n:]
assert header.pop("__metadata__") == {"from": "c++"}
spans = sorted(v["data_offsets"] for v in header.values())
assert spans[0][0] == 0 and spans[-1][1] == len(buf)
assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
def get(name, fmt):
    e = header[name]
    b, end = e["data_offsets"]
    return e["dtype"], e["shape"], list(struct.unpack("<%d%s" % ((end - b) // struct.calcsize(fmt), fmt), buf[b:end]))
assert get("f32", "f") == ("F32", [2, 3], [0, 1, 2, 3, 4, 5])
assert get("f64_t", "d") == ("F64", [3, 2], [0, 3, 1, 4, 2, 5])
assert get("f16", "e") == ("F16", [2, 3], [0, 0.5, 1, 1.5, 2, 2.5])
assert get("bf16", "H") == ("BF16", [2, 3], [0xc000, 0xbf80, 0, 0x3f80, 0x4000, 0x4040])
assert get("i64", "q") == ("I64", [2, 3], [-3, -2, -1, 0, 1, 2])
assert get("i32", "i") == ("I32", [2, 3], [0, 1, 2, 3, 4, 5])
assert get("u8", "B") == ("U8", [2, 3], [0, 40, 80, 120, 160, 200])
assert get("i8", "b") == ("I8", [2, 3], [-3, -2, -1, 0, 1, 2])
assert get("bool", "?") == ("BOOL", [2, 3], [False, False, False, True, True, True])
# writing: metadata first, tensors in the buffer in name order, header padded with spaces
tensors = {"h": ("F16", [2], struct.pack("<2e", 1, -0.5)), "ids": ("I64", [3], struct.pack("<3q", -1, 0, 1 << 40)),
           "mask": ("BOOL", [3], bytes([1, 0, 1])), "w": ("F32", [2, 2], struct.pack("<4f", 1.5, -2, 0.25, 8))}
hdr, data = {"__metadata__": {"from": "python"}}, b""
for name, (dt, shape, b) in tensors.items():
    hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
    data += b
text = json.dumps(hdr, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data)
)PY";
  ASSERT_EQ(run_python(dir, script, dir / "cpp.safetensors " + dir / "py.safetensors"), 0);
  check_python_file(dir / "py.safetensors");
}
