// HTTP GETs for `ztvm pull`: a JSON listing into memory, a file onto disk with resume. libcurl does
// the work (proxies from the environment, TLS with the system's certificates, redirects); it is
// loaded when the first Http is made, not linked, so the engine binary starts on machines that have
// a GPU driver and no network library (the benchmark machines), and only `pull` asks for it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ztvm::hub {

struct CurlApi;  // libcurl's entry points (http.cpp)

// Whatever keeps a pull from finishing: a message for the user, one line.
struct HubError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names in lower case; of the last response after redirects
};

struct DownloadResult {
  long status = 0;        // of the last response after redirects; 0 when none came
  bool complete = false;  // 200 or 206 and the body arrived whole
  bool interrupted = false;  // keep_going said stop (Ctrl-C)
  std::string error;      // transport error (curl's words) or the start of an error body
};

class Http {
 public:
  Http();  // throws HubError when libcurl cannot be loaded
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  // GET into memory. `headers` are "Name: value" lines; they go to the first host only, not to the
  // hosts of redirects (a token for the hub must not reach its CDN). Throws HubError on transport errors.
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers);

  // GET url onto `part_path`: if the file has bytes already, asks for the rest (Range) and appends
  // them; a server that answers with the whole file (200) rewrites it from the start. progress(have,
  // total) is called as bytes arrive (total 0 when unknown); keep_going() is polled and stops the
  // transfer when false. Bytes received stay in the file whatever happens, for the next resume.
  DownloadResult download(const std::string& url, const std::vector<std::string>& headers, const std::string& part_path,
                          const std::function<void(uint64_t have, uint64_t total)>& progress,
                          const std::function<bool()>& keep_going);

 private:
  CurlApi* curl_;
};

// "a b/c" -> "a%20b/c": the bytes of a URL path, '/' kept.
std::string url_path_escape(const std::string& s);

}  // namespace ztvm::hub
