// The `security:` section: parsing, keyrings and key files into a TransportSecurity.
#include "local/security_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>

#include "common/quote_for_error.h"
#include "common/yaml_util.h"

namespace ember::local {
namespace {

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// A key given as its Z85 text, or as the path of a .pub (or .key) file holding it.
Result<std::string> KeyOrFile(const std::string& text, const std::string& what) {
  if (CheckKey(text, what).ok()) return text;
  auto from_file = ReadPublicKeyFile(text);
  if (!from_file.ok()) {
    return InvalidArgument(what + ": neither a 40-character Z85 key nor a readable key file (" +
                           std::string(from_file.status().message()) + ")");
  }
  return from_file;
}

// Every ROLE[-NAME].pub in `dir`, and scheduler.pub as the scheduler's key.
Status ReadKeyring(const std::string& dir, TransportSecurity* security) {
  std::error_code error;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".pub") files.push_back(entry.path());
  }
  if (error) return NotFound("security.keyring '" + dir + "': " + error.message());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const std::string name = file.stem().string();
    ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(file.string()));
    if (name == "scheduler") {
      if (security->scheduler_key.empty()) security->scheduler_key = key;
      continue;
    }
    auto role = ParseTrustedRole(name.substr(0, name.find('-')));
    if (!role.ok()) {
      return InvalidArgument("keyring file '" + file.string() +
                             "': its name must start with server, trainer, admin or reader (or be "
                             "scheduler.pub)");
    }
    security->trusted.push_back(TrustedKey{name, key, *role});
  }
  return Status::Ok();
}

}  // namespace

Result<SecurityConfig> SecurityConfigFromYaml(const YAML::Node& node, const std::string& base_dir) {
  SecurityConfig config;
  if (!node.IsDefined() || node.IsNull()) return config;
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, "security",
                                            {"key_file", "scheduler_key", "keyring", "trusted"}));
  RETURN_IF_ERROR(config::ReadOptional(node, "security", "key_file", &config.key_file));
  RETURN_IF_ERROR(config::ReadOptional(node, "security", "scheduler_key", &config.scheduler_key));
  RETURN_IF_ERROR(config::ReadOptional(node, "security", "keyring", &config.keyring));
  config.key_file = Resolve(base_dir, config.key_file);
  config.keyring = Resolve(base_dir, config.keyring);
  if (!config.scheduler_key.empty() && !CheckKey(config.scheduler_key, "").ok()) {
    config.scheduler_key = Resolve(base_dir, config.scheduler_key);
  }
  const YAML::Node trusted = node["trusted"];
  if (trusted.IsDefined() && !trusted.IsNull()) {
    if (!trusted.IsSequence()) {
      return InvalidArgument("security.trusted: expected a list of {name, role, key}");
    }
    for (size_t i = 0; i < trusted.size(); ++i) {
      const std::string where = "security.trusted[" + std::to_string(i) + "]";
      TrustedKeyConfig entry;
      RETURN_IF_ERROR(config::RejectUnknownKeys(trusted[i], where, {"name", "role", "key"}));
      RETURN_IF_ERROR(config::ReadOptional(trusted[i], where, "name", &entry.name));
      RETURN_IF_ERROR(config::ReadOptional(trusted[i], where, "role", &entry.role));
      RETURN_IF_ERROR(config::ReadOptional(trusted[i], where, "key", &entry.key));
      if (entry.key.empty()) return InvalidArgument(where + ": no key");
      if (!CheckKey(entry.key, "").ok()) entry.key = Resolve(base_dir, entry.key);
      if (entry.name.empty()) entry.name = where;
      config.trusted.push_back(std::move(entry));
    }
  }
  return config;
}

Result<TransportSecurity> BuildTransportSecurity(const SecurityConfig& config,
                                                 const std::string& key_file, bool insecure) {
  TransportSecurity security;
  security.insecure = insecure;
  const std::string own = key_file.empty() ? config.key_file : key_file;
  if (!own.empty()) {
    ASSIGN_OR_RETURN(security.own, ReadKeyPairFile(own));
  }
  if (!config.scheduler_key.empty()) {
    ASSIGN_OR_RETURN(security.scheduler_key,
                     KeyOrFile(config.scheduler_key, "security.scheduler_key"));
  }
  for (const TrustedKeyConfig& entry : config.trusted) {
    const std::string what = "trusted key " + QuoteForError(entry.name);
    auto role = ParseTrustedRole(entry.role);
    if (!role.ok()) return role.status().WithContext(what);
    ASSIGN_OR_RETURN(std::string key, KeyOrFile(entry.key, what));
    security.trusted.push_back(TrustedKey{entry.name, key, *role});
  }
  if (!config.keyring.empty()) RETURN_IF_ERROR(ReadKeyring(config.keyring, &security));
  RETURN_IF_ERROR(ValidateSecurity(security));
  return security;
}

}  // namespace ember::local
