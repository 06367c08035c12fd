// The umbrella header: everything a program needs.
#pragma once

#include "spmd/checkpoint.hpp"
#include "spmd/ddp.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"
#include "spmd/sampler.hpp"
#include "spmd/store.hpp"
#include "spmd/tensor.hpp"
#include "spmd/topology.hpp"
#include "spmd/version.hpp"
#include "spmd/work.hpp"
