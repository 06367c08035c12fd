// A client's check, before it sends a request, that the request fits the wire's limits: a
// clear InvalidArgument naming the limit and what to do, instead of the server closing the
// connection on a frame it refuses.
#pragma once

#include "store/wire.hpp"

namespace spmd::store {

void check_request_fits(const wire::Request& req, const wire::Limits& limits);

}  // namespace spmd::store
