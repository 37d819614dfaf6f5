// A backend plugin built "against another engine": its interface fingerprint is not
// libkiln's. The registry must refuse it with a reason instead of calling into it
// (tests/CMakeLists.txt: cli.stale_plugin).
namespace kiln { struct BackendFactory; }

extern "C" __attribute__((visibility("default"))) const char kiln_backend_abi[] = "0000000000000000";

extern "C" __attribute__((visibility("default"))) kiln::BackendFactory* kiln_backend_factory() {
  __builtin_trap();  // never reached: a stale plugin must not be entered
}
