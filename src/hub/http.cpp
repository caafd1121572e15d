#include "hub/http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ztvm::hub {

// The few libcurl entry points we use, looked up in the shared library at run time. curl.h gives
// the types only; nothing here is linked against libcurl.
struct CurlApi {
  void* lib = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  CURLcode (*global_init)(long) = nullptr;
};

namespace {

template <typename F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw HubError(std::string("the loaded libcurl lacks ") + name);
}

// One transfer's handle with the options every request shares.
struct Easy {
  const CurlApi& c;
  CURL* h;
  curl_slist* list = nullptr;
  char err[CURL_ERROR_SIZE] = {};
  Easy(const CurlApi& curl, const std::string& url, const std::vector<std::string>& headers)
      : c(curl), h(curl.easy_init()) {
    if (!h) throw HubError("libcurl could not start a transfer");
    for (const auto& line : headers) list = c.slist_append(list, line.c_str());
    c.easy_setopt(h, CURLOPT_URL, url.c_str());
    c.easy_setopt(h, CURLOPT_HTTPHEADER, list);
    c.easy_setopt(h, CURLOPT_USERAGENT, "ztvm");
    c.easy_setopt(h, CURLOPT_ERRORBUFFER, err);
    // Redirects are followed (the hub sends file bodies from a CDN); libcurl keeps the custom
    // Authorization header to the first host unless told otherwise, which is what we want.
    c.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    c.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    c.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    // A connection that delivers nothing for a minute is dead: fail rather than hang.
    c.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    c.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  }
  ~Easy() {
    c.easy_cleanup(h);
    c.slist_free_all(list);
  }
  long status() const {
    long s = 0;
    c.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s);
    return s;
  }
  std::string error(CURLcode rc) const { return err[0] ? std::string(err) : std::string(c.easy_strerror(rc)); }
};

// Header lines of every response in a redirect chain arrive here; a status line starts a new set.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return (char)std::tolower(ch); });
  size_t b = line.find_first_not_of(" \t", colon + 1);
  size_t e = line.find_last_not_of(" \t\r\n");
  (*headers)[name] = (b == std::string::npos || e < b) ? "" : line.substr(b, e - b + 1);
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// The state of one download while libcurl calls back into it.
struct FileSink {
  const Easy* easy;
  FILE* f;
  uint64_t have;           // bytes in the file
  uint64_t total = 0;      // the file's whole size once known
  bool started = false, accepted = false;
  long status = 0;
  std::string error_body;   // the start of a body that is not the file (an error page)
  std::string write_error;  // why the part file could not take the bytes
  const std::function<void(uint64_t, uint64_t)>* progress;
  const std::function<bool()>* keep_going;
  bool stopped = false;
};

size_t on_file_data(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<FileSink*>(user);
  const size_t bytes = size * n;
  if (!s->started) {  // the first bytes of the final response: is it the file, and from where?
    s->started = true;
    s->status = s->easy->status();
    curl_off_t len = -1;
    s->easy->c.easy_getinfo(s->easy->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
    if (s->status == 206) {
      s->accepted = true;
      if (len >= 0) s->total = s->have + (uint64_t)len;
    } else if (s->status == 200) {  // the whole file: whatever the part file held goes
      s->accepted = true;
      if (s->have && ftruncate(fileno(s->f), 0) != 0) {
        s->write_error = std::string("cannot restart it: ") + std::strerror(errno);
        return 0;
      }
      s->have = 0;
      if (len >= 0) s->total = (uint64_t)len;
    }
  }
  if (!s->accepted) {
    if (s->error_body.size() < 512) s->error_body.append(data, std::min<size_t>(bytes, 512 - s->error_body.size()));
    return bytes;
  }
  if (std::fwrite(data, 1, bytes, s->f) != bytes) {
    s->write_error = std::strerror(errno);
    return 0;  // aborts the transfer
  }
  s->have += bytes;
  if (*s->progress) (*s->progress)(s->have, s->total);
  return bytes;
}

int on_tick(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* s = static_cast<FileSink*>(user);
  if (*s->keep_going && !(*s->keep_going)()) {
    s->stopped = true;
    return 1;  // aborts the transfer
  }
  return 0;
}

}  // namespace

Http::Http() : curl_(new CurlApi) {
  // Debian and Ubuntu name the OpenSSL build libcurl.so.4; the GnuTLS one has the same interface.
  for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"}) {
    if ((curl_->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!curl_->lib) {
    delete curl_;
    throw HubError("downloading needs libcurl, which is not installed (Debian/Ubuntu: apt install libcurl4)");
  }
  try {
    bind(curl_->lib, "curl_easy_init", curl_->easy_init);
    bind(curl_->lib, "curl_easy_setopt", curl_->easy_setopt);
    bind(curl_->lib, "curl_easy_perform", curl_->easy_perform);
    bind(curl_->lib, "curl_easy_getinfo", curl_->easy_getinfo);
    bind(curl_->lib, "curl_easy_cleanup", curl_->easy_cleanup);
    bind(curl_->lib, "curl_easy_strerror", curl_->easy_strerror);
    bind(curl_->lib, "curl_slist_append", curl_->slist_append);
    bind(curl_->lib, "curl_slist_free_all", curl_->slist_free_all);
    bind(curl_->lib, "curl_global_init", curl_->global_init);
  } catch (...) {
    dlclose(curl_->lib);
    delete curl_;
    throw;
  }
  curl_->global_init(CURL_GLOBAL_DEFAULT);
}

Http::~Http() {
  // libcurl stays loaded: its global state (TLS libraries) is not meant to be torn down and reloaded.
  delete curl_;
}

HttpResponse Http::get(const std::string& url, const std::vector<std::string>& headers) {
  Easy e(*curl_, url, headers);
  HttpResponse r;
  curl_->easy_setopt(e.h, CURLOPT_WRITEFUNCTION, on_body);
  curl_->easy_setopt(e.h, CURLOPT_WRITEDATA, &r.body);
  curl_->easy_setopt(e.h, CURLOPT_HEADERFUNCTION, on_header);
  curl_->easy_setopt(e.h, CURLOPT_HEADERDATA, &r.headers);
  curl_->easy_setopt(e.h, CURLOPT_ACCEPT_ENCODING, "");  // listings compress well
  CURLcode rc = curl_->easy_perform(e.h);
  if (rc != CURLE_OK) throw HubError(url + ": " + e.error(rc));
  r.status = e.status();
  return r;
}

DownloadResult Http::download(const std::string& url, const std::vector<std::string>& headers,
                              const std::string& part_path, const std::function<void(uint64_t, uint64_t)>& progress,
                              const std::function<bool()>& keep_going) {
  FILE* f = std::fopen(part_path.c_str(), "ab");
  if (!f) throw HubError("cannot write " + part_path + ": " + std::strerror(errno));
  // Two pulls of one file would append to it in turn and spoil it: the second one stops here.
  if (flock(fileno(f), LOCK_EX | LOCK_NB) != 0) {
    std::fclose(f);
    throw HubError("another ztvm pull is downloading into " + part_path + "; let it finish");
  }
  std::fseek(f, 0, SEEK_END);
  FileSink sink{nullptr, f, (uint64_t)std::ftell(f)};
  sink.progress = &progress;
  sink.keep_going = &keep_going;
  DownloadResult r;
  {
    Easy e(*curl_, url, headers);
    sink.easy = &e;
    const std::string range = std::to_string(sink.have) + "-";
    if (sink.have) curl_->easy_setopt(e.h, CURLOPT_RANGE, range.c_str());
    curl_->easy_setopt(e.h, CURLOPT_WRITEFUNCTION, on_file_data);
    curl_->easy_setopt(e.h, CURLOPT_WRITEDATA, &sink);
    curl_->easy_setopt(e.h, CURLOPT_NOPROGRESS, 0L);
    curl_->easy_setopt(e.h, CURLOPT_XFERINFOFUNCTION, on_tick);
    curl_->easy_setopt(e.h, CURLOPT_XFERINFODATA, &sink);
    CURLcode rc = curl_->easy_perform(e.h);
    r.status = sink.started ? sink.status : e.status();
    r.interrupted = sink.stopped;
    if (!sink.write_error.empty()) r.error = "writing " + part_path + ": " + sink.write_error;
    else if (rc != CURLE_OK && !sink.stopped) r.error = e.error(rc);
    else if (!sink.accepted) r.error = sink.error_body;
    r.complete = rc == CURLE_OK && sink.accepted;
  }
  if (std::fclose(f) != 0 && r.error.empty()) {
    r.error = "writing " + part_path + ": " + std::strerror(errno);
    r.complete = false;
  }
  return r;
}

std::string url_path_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '/' || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += (char)ch;
    } else {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

}  // namespace ztvm::hub
