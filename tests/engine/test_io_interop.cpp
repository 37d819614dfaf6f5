// safetensors interop with Python: the reference library (safetensors.torch) when
// installed, and always a reader/writer written from the published format in plain
// Python (json + struct), independent of the C++ code.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/engine/test_util.h"
#include "engine/core/ops.h"
#include "engine/io/safetensors.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::io;
namespace fs = std::filesystem;

namespace {

bool python_has(const std::string& module) {
  return std::system(("python3 -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
}

int run_python(const TempDir& dir, const std::string& script, const std::string& args) {
  std::ofstream(dir / "check.py") << script;
  return std::system(("python3 " + dir / "check.py" + " " + args).c_str());
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

TEST(SafetensorsInterop, PythonSafetensorsTorch) {
  if (!python_has("torch")) GTEST_SKIP() << "python3 package torch (python3-torch) not installed";
  if (!python_has("safetensors")) GTEST_SKIP() << "python3 package safetensors not installed";
  TempDir dir("kiln-interop");
  save_safetensors(dir / "cpp.safetensors", cpp_tensors(), {{"from", "c++"}});
  const char* script = R"PY(
import sys, torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
d = load_file(sys.argv[1])
m = torch.arange(6, dtype=torch.float32).reshape(2, 3)
want = {"f32": m, "f64_t": m.double().t(), "f16": (m * 0.5).half(), "bf16": (m - 2).bfloat16(),
        "i64": m.long() - 3, "i32": m.int(), "u8": (m * 40).to(torch.uint8), "i8": (m - 3).to(torch.int8),
        "bool": m > 2}
assert set(d) == set(want), sorted(d)
for k, v in want.items():
    assert d[k].dtype == v.dtype and torch.equal(d[k], v), (k, d[k], v)
with safe_open(sys.argv[1], "pt") as f:
    assert f.metadata() == {"from": "c++"}, f.metadata()
save_file({"w": torch.tensor([[1.5, -2], [0.25, 8]]), "ids": torch.tensor([-1, 0, 1 << 40]),
           "h": torch.tensor([1, -0.5]).half(), "mask": torch.tensor([True, False, True])},
          sys.argv[2], metadata={"from": "python"})
)PY";
  ASSERT_EQ(run_python(dir, script, dir / "cpp.safetensors " + dir / "py.safetensors"), 0);
  check_python_file(dir / "py.safetensors");
}

TEST(SafetensorsInterop, PlainPythonFormat) {
  if (!python_has("json")) GTEST_SKIP() << "python3 not installed";
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
