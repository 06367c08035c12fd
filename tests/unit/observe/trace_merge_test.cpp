// spmdrun's trace merge: per-rank files (as the trace writer leaves them, also cut short by a
// killed rank) become one valid Chrome trace with times relative to the first event; and
// --hang-timeout's durations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "../../common/json_value.hpp"
#include "launcher/hang_watch.hpp"
#include "launcher/trace_merge.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {
namespace {

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

TEST(TraceMerge, OneValidTraceWithTimesFromTheFirstEvent) {
  char dir_template[] = "/tmp/spmd_merge_test_XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  write_file(dir + "/rank0.11.trace.json",
             "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"rank 0\"}}\n"
             ",{\"name\":\"all_reduce\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":1700000000000100.500,\"dur\":3.000,"
             "\"args\":{\"seq\":0}}\n]\n");
  // A rank killed mid-write: the last line is cut short and there is no closing bracket.
  write_file(dir + "/rank1.12.trace.json",
             "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"rank 1\"}}\n"
             ",{\"name\":\"all_reduce\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":1700000000000000.250,\"dur\":1.000,"
             "\"args\":{\"seq\":0}}\n,{\"name\":\"broad");
  write_file(dir + "/notes.txt", "not a trace");
  std::vector<std::string> files = trace_files(dir);
  ASSERT_EQ(files.size(), 2u);
  std::string out = dir + "/merged.json";
  MergeResult r = merge_traces(files, out);
  EXPECT_EQ(r.files, 2u);
  EXPECT_EQ(r.events, 2u);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  auto json = spmd::testing::parse_json(text.str());
  ASSERT_TRUE(json) << text.str();
  const auto* events = json->get("traceEvents");
  ASSERT_TRUE(events);
  ASSERT_EQ(events->items.size(), 4u);
  std::map<int, double> ts;
  for (const auto& e : events->items)
    if (e.str("ph") == "X") ts[static_cast<int>(e.num("pid"))] = e.num("ts");
  EXPECT_DOUBLE_EQ(ts[1], 0.0) << "the earliest event starts the timeline";
  EXPECT_DOUBLE_EQ(ts[0], 100.25);
  for (const auto& f : {files[0], files[1], out, dir + "/notes.txt"}) ::unlink(f.c_str());
  ::rmdir(dir.c_str());
}

TEST(TraceMerge, AnUnwritableOutputIsAnError) {
  EXPECT_THROW(merge_traces({}, "/nonexistent-dir/x.json"), Error);
}

TEST(HangTimeout, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "5"), 5);
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "0.5"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "2m"), 120);
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "1h"), 3600);
  EXPECT_DOUBLE_EQ(parse_duration("--hang-timeout", "0"), 0);
  for (const char* bad : {"", "x", "5x", "-1", "5 s", "1e9"}) EXPECT_THROW(parse_duration("--hang-timeout", bad), Error) << bad;
}

TEST(HangTimeout, DefaultsToHalfOfSpmdTimeout) {
  Options o;
  ::unsetenv("SPMD_TIMEOUT");
  EXPECT_DOUBLE_EQ(hang_timeout_s(o), 300);
  ::setenv("SPMD_TIMEOUT", "60", 1);
  EXPECT_DOUBLE_EQ(hang_timeout_s(o), 30);
  o.hang_timeout_s = 0;
  EXPECT_DOUBLE_EQ(hang_timeout_s(o), 0);
  ::unsetenv("SPMD_TIMEOUT");
}

}  // namespace
}  // namespace spmd::launcher
