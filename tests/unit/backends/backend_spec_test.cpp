// Backend specs: names and device:name pairs, how they are written, where the default comes
// from (SPMD_BACKEND, a GPU), and the errors for specs that cannot work.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/backend.hpp"
#include "backends/backend_spec.hpp"
#include "device/cuda_api.hpp"
#include "fake_cuda.hpp"

namespace spmd::test {
namespace {

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string error_of(const std::string& spec) {
  try {
    parse_backend_spec(spec, "backend");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "\"" << spec << "\" was accepted";
  return "";
}

TEST(BackendSpec, NamesAndPairsAreWrittenOneWay) {
  EXPECT_EQ(parse_backend_spec("native", "backend").canonical, "native");
  EXPECT_EQ(parse_backend_spec(" mpi ", "backend").single, "mpi");
  BackendSpec s = parse_backend_spec("cuda:nccl, cpu:native", "backend");
  ASSERT_EQ(s.routes.size(), 2u);
  EXPECT_EQ(s.routes[0].first, DeviceType::CPU);
  EXPECT_EQ(s.routes[1].second, "nccl");
  EXPECT_EQ(s.canonical, "cpu:native,cuda:nccl");
  EXPECT_EQ(parse_backend_spec("cpu:mpi", "backend").canonical, "cpu:mpi");
}

TEST(BackendSpec, BadSpecsSayWhatIsWrong) {
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("gloo").find("\"gloo\" is not built into this spmd; the built ones are: \"native\""),
            std::string::npos);
  EXPECT_NE(error_of("native,nccl").find("need a device type each"), std::string::npos);
  EXPECT_NE(error_of("tpu:native").find("unknown device type \"tpu\""), std::string::npos);
  EXPECT_NE(error_of("cpu:native,cpu:mpi").find("names a backend for cpu twice"), std::string::npos);
  EXPECT_NE(error_of("cpu:nccl").find("the nccl backend does not serve cpu buffers"), std::string::npos);
  EXPECT_NE(error_of("cuda:native").find("the native backend does not serve cuda buffers"), std::string::npos);
  EXPECT_NE(error_of("cpu:").find("is not built into this spmd"), std::string::npos);
}

TEST(BackendSpec, DefaultComesFromTheRequestThenSpmdBackendThenTheMachine) {
  ScopedEnv no_env("SPMD_BACKEND", nullptr);
  EXPECT_EQ(resolve_backend_spec("cuda:nccl,cpu:mpi"), "cpu:mpi,cuda:nccl");
  // Without NVIDIA's driver (the tests run without a GPU): native. With one, NCCL for CUDA buffers.
  std::string why;
  EXPECT_EQ(resolve_backend_spec(""), cuda_driver_present(&why) ? "cpu:native,cuda:nccl" : "native") << why;
  {
    ScopedEnv env("SPMD_BACKEND", "mpi");
    EXPECT_EQ(resolve_backend_spec(""), "mpi");
    EXPECT_EQ(resolve_backend_spec("native"), "native");  // an explicit choice wins
  }
  {
    ScopedEnv env("SPMD_BACKEND", "cpu:bogus");
    try {
      resolve_backend_spec("");
      ADD_FAILURE() << "SPMD_BACKEND=cpu:bogus was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SPMD_BACKEND \"cpu:bogus\""), std::string::npos) << e.what();
    }
  }
  // A process that sees a GPU (here a fake one) gets NCCL for CUDA buffers by default, decided
  // without a call into CUDA.
  ScopedFakeCuda fake(2);
  EXPECT_TRUE(cuda_device_present());
  const int calls = fake->calls();
  EXPECT_EQ(resolve_backend_spec(""), "cpu:native,cuda:nccl");
  EXPECT_EQ(fake->calls(), calls);
}

TEST(BackendSpec, TheListOfUsableBackends) {
  auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "native"), names.end());
  ScopedFakeCuda fake(1);
  names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "nccl"), names.end());
}

}  // namespace
}  // namespace spmd::test
