#include "store/request_fits.hpp"

#include <string>

#include "spmd/error.hpp"

namespace spmd::store {

void check_request_fits(const wire::Request& req, const wire::Limits& limits) {
  auto describe = [&] { return wire::describe(req.op, req.keys); };
  for (const auto& k : req.keys)
    if (k.size() > limits.max_key_bytes && req.op != wire::Op::Auth)
      raise(ErrorKind::InvalidArgument, "store key of " + std::to_string(k.size()) +
                                            " bytes exceeds the limit of " +
                                            std::to_string(limits.max_key_bytes) + " bytes");
  size_t total = 0;
  for (const auto& v : req.values) {
    total += v.size();
    if (v.size() > limits.max_value_bytes)
      raise(ErrorKind::InvalidArgument,
            "store value of " + std::to_string(v.size()) + " bytes for " + describe() +
                " exceeds the limit of " + std::to_string(limits.max_value_bytes) + " bytes");
  }
  if (req.keys.size() > limits.max_keys)
    raise(ErrorKind::InvalidArgument, std::to_string(req.keys.size()) +
                                          " keys in one store request exceed the limit of " +
                                          std::to_string(limits.max_keys));
  size_t frame = 64 + total + req.values.size() * 4;
  for (const auto& k : req.keys) frame += k.size() + 4;
  if (frame > limits.max_frame_bytes())
    raise(ErrorKind::InvalidArgument, describe() + " needs a request of " + std::to_string(frame) +
                                          " bytes, more than the limit of " +
                                          std::to_string(limits.max_frame_bytes()) +
                                          "; split it into several calls");
}

}  // namespace spmd::store
