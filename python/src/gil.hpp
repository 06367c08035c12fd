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

// True once the interpreter has begun to finalize (or is gone). A thread of ours that then
// asks for the GIL — freeing the last reference to a tensor with a Python object does — is
// ended by Python, which aborts the process.
inline bool python_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

}  // namespace spmd::torch_dist
