// Uses the installed LibTorch adapter: a one-process world, a LibTorch tensor all-reduced
// through spmd::torch::view.
#include <spmd/spmd.hpp>
#include <spmd/torch.hpp>

#include <cstdio>
#include <memory>

int main() {
  auto world = spmd::ProcessGroup::create(std::make_shared<spmd::HashStore>(), 0, 1);
  ::torch::Tensor t = ::torch::arange(4, ::torch::kFloat32);
  world->all_reduce(spmd::torch::view(t));
  std::printf("spmd_torch consumer: sum %.1f\n", t.sum().item<float>());
  return t.sum().item<float>() == 6.0f ? 0 : 1;
}
