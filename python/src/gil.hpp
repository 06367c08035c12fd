// WithoutGil: releases the Python GIL for a scope if this thread holds it (destructors run
// from Python's garbage collector hold it; joining threads that run Python callbacks must not).
#pragma once

#include <Python.h>

namespace spmd::torch_dist {

class WithoutGil {
 public:
  WithoutGil() : state_(Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~WithoutGil() {
    if (state_) PyEval_RestoreThread(state_);
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace spmd::torch_dist
