#include "launcher/error_file.hpp"

#include <ctime>
#include <fstream>
#include <sstream>

#include "launcher/stream_pump.hpp"

namespace spmd::launcher {

std::optional<WorkerErrorFile> read_error_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::optional<JsonValue> doc = parse_json(text.str());
  const JsonValue* message = doc ? doc->find("message") : nullptr;
  if (message == nullptr) return std::nullopt;
  WorkerErrorFile f;
  f.path = path;
  if (message->is_string()) {  // torch's newer, flat form
    f.message = message->text;
  } else {
    if (const JsonValue* m = message->find("message"); m != nullptr && m->is_string()) f.message = m->text;
    if (const JsonValue* extra = message->find("extraInfo"))
      if (const JsonValue* stack = extra->find("py_callstack"); stack != nullptr && stack->is_string())
        f.traceback = stack->text;
  }
  if (f.message.empty() && f.traceback.empty()) return std::nullopt;
  f.data = std::move(*doc);
  return f;
}

JsonValue job_error_document(const std::optional<WorkerErrorFile>& root_file, int error_code,
                             const std::string& summary, const std::string& stderr_tail) {
  if (root_file) {
    JsonValue doc = root_file->data;
    for (auto& [key, message] : doc.members)
      if (key == "message" && message.is_object()) message.set("errorCode", JsonValue::number(error_code));
    return doc;
  }
  JsonValue extra = JsonValue::object();
  extra.set("py_callstack", JsonValue::string(stderr_tail));
  extra.set("timestamp", JsonValue::string(std::to_string(std::time(nullptr))));
  JsonValue message = JsonValue::object();
  message.set("message", JsonValue::string(summary));
  message.set("extraInfo", std::move(extra));
  message.set("errorCode", JsonValue::number(error_code));
  JsonValue doc = JsonValue::object();
  doc.set("message", std::move(message));
  return doc;
}

void write_error_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::string warning = "spmdrun: could not write the job's error file " + path + " (TORCHELASTIC_ERROR_FILE)\n";
    write_all(2, warning.data(), warning.size());
  }
}

}  // namespace spmd::launcher
