#!/bin/sh
# The layer rule holds in the build (cmake/SpmdLayers.cmake): a file of the transport layer
# cannot include a backend's or the group layer's header, and the call layer cannot take a
# symbol from the collectives above it. Each refusal is checked beside a control that the
# same file, without the upward step, builds — so the refusal is the rule, not a broken setup.
# usage: layer_rule_test.sh CXX BUILD_DIR SOURCE_DIR
set -u
cxx=$1 build=$2 here=$3/tests/layers
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fail=0
compile() {  # layer, extra flags...
  layer=$1; shift
  "$cxx" -std=c++20 -fsyntax-only -I"$build/layers/$layer" "$@" "$here/upward_include.cpp" >"$work/out" 2>&1
}
if ! compile transport; then
  echo "FAIL: the control (transport including call/ and spmd/store.hpp) does not compile:"; cat "$work/out"; fail=1
fi
for header in backends/backend.hpp group/group_impl.hpp collectives/select.hpp spmd/process_group.hpp; do
  if compile transport "-DUPWARD=\"$header\""; then
    echo "FAIL: a transport file including $header compiled"; fail=1
  elif ! grep -q "$header: No such file" "$work/out"; then
    echo "FAIL: including $header from transport failed, but not for want of the header:"; cat "$work/out"; fail=1
  else
    echo "ok: transport cannot include $header"
  fi
done

link() {  # extra flags...
  "$cxx" -std=c++20 -fPIC -shared -Wl,--no-undefined -I"$build/layers/call" "$@" "$here/upward_symbol.cpp" \
    -L"$build/layers/checks" -lspmd_layer_check_call -o "$work/probe.so" >"$work/out" 2>&1
}
if [ ! -e "$build/layers/checks/libspmd_layer_check_call.so" ]; then
  echo "skipped the link check: no layer check libraries in this build (sanitizer builds have none)"
elif ! link; then
  echo "FAIL: the control (the call layer's own describe()) does not link:"; cat "$work/out"; fail=1
elif link -DUPWARD; then
  echo "FAIL: the call layer linked with a symbol of the collectives layer"; fail=1
elif ! grep -q "undefined reference to .*algorithm_override" "$work/out"; then
  echo "FAIL: the upward symbol failed to link, but not as an undefined reference:"; cat "$work/out"; fail=1
else
  echo "ok: the call layer cannot take algorithm_override() from the collectives layer"
fi
[ $fail -eq 0 ] && echo "the layer rule holds"
exit $fail
