// FP8 Lab — session writer: atomic saves (write beside, fsync, rename), append / delete / rename /
// merge of runs by object copy. Layout: docs/session-format.md.
#include "session/hdf5_util.h"
#include "session/session_layout.h"
#include "session/session.h"
#include "session/session_lock.h"
#include "json/json_document.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FP8LAB_VERSION
#define FP8LAB_VERSION "unknown"
#endif

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;
using namespace h5;

namespace {

/// A temporary file beside the target, removed unless committed.
struct TempFile {
  std::string path;
  bool committed = false;
  ~TempFile() {
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};

std::string dirOf(const std::string& path) {
  fs::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

bool makeTemp(const std::string& target, TempFile* tmp, Status* st) {
  const std::string dir = dirOf(target);
  const std::string base = fs::path(target).filename().string();
  std::string templ = dir + "/." + base + ".tmp-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    st->add(C::WriteFailed, target, "cannot create a temporary file in '" + dir + "': " + std::strerror(errno));
    return false;
  }
  ::close(fd);
  tmp->path = buf.data();
  return true;
}

/// fsync(file), rename(tmp → target), fsync(directory). `target` is the real file (symbolic links
/// resolved); `shown` the path the caller gave, for messages.
bool commitTemp(TempFile* tmp, const std::string& target, const std::string& shown, Status* st, bool durable = true) {
  const int fd = ::open(tmp->path.c_str(), O_RDONLY);
  if (fd < 0 || (durable && ::fsync(fd) != 0)) {
    st->add(C::WriteFailed, shown, std::string("fsync of the temporary file failed: ") + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return false;
  }
  ::close(fd);
  // Keep the permissions of a file being replaced; new files get the umask default.
  struct stat old {};
  if (::stat(target.c_str(), &old) == 0)
    ::chmod(tmp->path.c_str(), old.st_mode & 07777);
  else {
    const mode_t um = ::umask(0);
    ::umask(um);
    ::chmod(tmp->path.c_str(), 0666 & ~um);
  }
  if (::rename(tmp->path.c_str(), target.c_str()) != 0) {
    st->add(C::WriteFailed, shown, std::string("rename of the temporary file failed: ") + std::strerror(errno));
    return false;
  }
  tmp->committed = true;
  const int dfd = durable ? ::open(dirOf(target).c_str(), O_RDONLY | O_DIRECTORY) : -1;
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

/// The file a write to `path` replaces: `path` itself, or, when it is a symbolic link (or a chain
/// of them), the file it finally points to (relative link texts resolve against the link's own
/// directory, as the kernel does). Renaming over the link itself would replace the link by a
/// regular file and leave its target stale. Only the last component matters: rename works
/// through symbolic links to directories. A dangling link resolves to its missing target (which
/// the write then creates). False (WriteFailed) for a link loop or an unreadable link.
bool resolveTarget(const std::string& path, std::string* real, Status* st) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) { // 40: Linux's limit on links followed in one lookup
    std::error_code ec;
    if (!fs::is_symlink(p, ec)) {
      *real = p.string();
      return true;
    }
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) {
      st->add(C::WriteFailed, path, "cannot read the symbolic link '" + p.string() + "': " + ec.message());
      return false;
    }
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  st->add(C::WriteFailed, path, "too many levels of symbolic links (a link loop?); nothing was written");
  return false;
}

/// Refuses to replace an existing file the user may not write: rename() needs only the directory
/// writable, so without this a `chmod a-w` session (or another user's file in a shared
/// directory) would be silently rewritten. faccessat(AT_EACCESS): the effective ids decide, as
/// for open(O_WRONLY). A file with no write permission bit is refused for root too.
bool targetWritable(const std::string& real, const std::string& shown, Status* st) {
  std::error_code ec;
  if (!fs::exists(real, ec)) return true;
  if (::faccessat(AT_FDCWD, real.c_str(), W_OK, AT_EACCESS) != 0 && (errno == EACCES || errno == EPERM)) {
    st->add(C::WriteFailed, shown, "the file is read-only (permission denied); nothing was written");
    return false;
  }
  // No write permission bit at all (chmod a-w): write-protected also for root, whom access()
  // always lets write.
  struct stat sb {};
  if (::stat(real.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0222) == 0) {
    st->add(C::WriteFailed, shown, "the file is read-only (no write permission bit); nothing was written");
    return false;
  }
  return true;
}

Handle lcplIntermediate() {
  Handle p = plist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(p, 1);
  H5Pset_char_encoding(p, H5T_CSET_UTF8);
  return p;
}

/// Chunk shape of about ≤ 1 MiB, obtained by halving the largest dimension. A 3-D dataset is a
/// stack of planes (block maps by step) read one plane at a time: its chunks hold whole planes,
/// as many as fit in 1 MiB, and a plane over 1 MiB is split by halving its larger side.
std::vector<hsize_t> chunkDims(const std::vector<int64_t>& shape, size_t elem) {
  std::vector<hsize_t> c(shape.begin(), shape.end());
  for (auto& x : c) x = std::max<hsize_t>(x, 1);
  auto bytes = [&] {
    hsize_t n = elem;
    for (auto x : c) n *= x;
    return n;
  };
  if (c.size() == 3) {
    const hsize_t plane = hsize_t(elem) * c[1] * c[2];
    c[0] = std::clamp<hsize_t>((hsize_t(1) << 20) / plane, 1, c[0]);
    while (bytes() > (hsize_t(1) << 20) && std::max(c[1], c[2]) > 1) {
      hsize_t& side = c[1] >= c[2] ? c[1] : c[2];
      side = (side + 1) / 2;
    }
    return c;
  }
  while (bytes() > (hsize_t(1) << 20)) {
    auto it = std::max_element(c.begin(), c.end());
    if (*it <= 1) break;
    *it = (*it + 1) / 2;
  }
  return c;
}

struct WriteCtx {
  const WriteOptions* opt;
  std::string file; // target path (for messages)
  int64_t total_bytes = 1;
  int64_t done_bytes = 0;
};

/// Test hook: with FP8LAB_TEST_SAVE_PAUSE=PATH in the environment, a save stops just before its
/// commit — every run written into the temporary file, the target not yet replaced — creates PATH
/// and waits until PATH is removed (at most 120 s). Reliability tests kill or signal a process
/// there instead of racing its save. Unset, it costs one getenv per save.
void pauseBeforeCommitIfAsked() {
  const char* path = std::getenv("FP8LAB_TEST_SAVE_PAUSE");
  if (!path || !*path) return;
  if (FILE* f = std::fopen(path, "w")) std::fclose(f);
  for (int i = 0; i < 24000 && ::access(path, F_OK) == 0; ++i) ::usleep(5000);
}

bool progress(WriteCtx& ctx, const std::string& stage, Status* st) {
  if (!ctx.opt->progress) return true;
  const double f = ctx.total_bytes > 0 ? double(ctx.done_bytes) / double(ctx.total_bytes) : 0.0;
  if (!ctx.opt->progress(std::min(1.0, f), stage)) {
    st->add(C::WriteFailed, ctx.file, "cancelled; the previous file is unchanged");
    return false;
  }
  return true;
}

bool writeDataset(hid_t run_group, const std::string& rel, const std::string& full, const Dataset& d, WriteCtx& ctx,
                  Status* st) {
  const std::string where = ctx.file + "#" + full;
  if (d.shape.empty()) {
    st->add(C::InvalidArgument, where, "dataset has rank 0 (give it a shape)");
    return false;
  }
  for (auto s : d.shape)
    if (s < 0) {
      st->add(C::InvalidArgument, where, "negative dimension");
      return false;
    }
  if (d.storedCount() != d.elementCount()) {
    st->add(C::InvalidArgument, where,
            "data holds " + std::to_string(d.storedCount()) + " " + toString(d.dtype) + " values but the shape needs " +
                std::to_string(d.elementCount()));
    return false;
  }
  if (ctx.opt->fault_injection && !ctx.opt->fault_injection(full)) {
    st->add(C::WriteFailed, where, "injected write failure (test hook); the previous file is unchanged");
    return false;
  }
  if (!progress(ctx, "writing " + full, st)) return false;

  std::vector<hsize_t> dims(d.shape.begin(), d.shape.end());
  Handle sp = space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  Handle dcpl = plist(H5Pcreate(H5P_DATASET_CREATE));
  const bool compress = ctx.opt->compress && d.elementCount() >= ctx.opt->compress_min_elements;
  if (compress) {
    auto c = chunkDims(d.shape, d.elementBytes());
    H5Pset_chunk(dcpl, static_cast<int>(c.size()), c.data());
    if (d.elementBytes() > 1) H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, static_cast<unsigned>(std::clamp(ctx.opt->gzip_level, 1, 9)));
  }
  Handle lcpl = lcplIntermediate();
  Handle ds = dataset(H5Dcreate2(run_group, rel.c_str(), fileType(d.dtype), sp, lcpl, dcpl, H5P_DEFAULT));
  if (!ds.valid()) {
    st->add(C::WriteFailed, where, "cannot create dataset: " + errorText());
    return false;
  }
  const void* buf = nullptr;
  switch (d.dtype) {
  case DType::Float32:
    buf = d.f32.data();
    break;
  case DType::Float64:
    buf = d.f64.data();
    break;
  case DType::UInt8:
    buf = d.u8.data();
    break;
  case DType::Int64:
    buf = d.i64.data();
    break;
  }
  if (d.elementCount() > 0 && H5Dwrite(ds, memType(d.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    st->add(C::WriteFailed, where, "cannot write data: " + errorText());
    return false;
  }
  Attributes attrs = d.attrs;
  if (!attrs.count("units")) attrs["units"] = std::string();
  if (!attrs.count("meaning")) attrs["meaning"] = std::string();
  for (const auto& [k, v] : attrs)
    if (!writeAttr(ds, k, v)) {
      st->add(C::WriteFailed, where, "cannot write attribute '" + k + "': " + errorText());
      return false;
    }
  ctx.done_bytes += d.elementCount() * static_cast<int64_t>(d.elementBytes());
  return true;
}

bool writeRun(hid_t runs, const Run& run, const std::string& id, WriteCtx& ctx, Status* st) {
  const std::string where = ctx.file + "#/runs/" + id;
  std::string why;
  if (!isValidRunId(id, &why)) {
    st->add(C::InvalidArgument, where, why);
    return false;
  }
  Handle g = group(H5Gcreate2(runs, id.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!g.valid()) {
    st->add(C::WriteFailed, where, "cannot create run group: " + errorText());
    return false;
  }
  Attributes a = run.attrs;
  a["type"] = run.type;
  a["config"] = run.config_json;
  a["backend"] = run.backend;
  a["device"] = run.device;
  a["created_utc"] = run.created_utc.empty() ? utcNow() : run.created_utc;
  a["app_version"] = run.app_version.empty() ? std::string(FP8LAB_VERSION) : run.app_version;
  bool ok = writeAttrU64(g, "seed", run.seed);
  for (const auto& [k, v] : a) ok = ok && writeAttr(g, k, v);
  if (!ok) {
    st->add(C::WriteFailed, where, "cannot write run attributes: " + errorText());
    return false;
  }
  {
    Handle m = group(H5Gcreate2(g, "metrics", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!m.valid()) {
      st->add(C::WriteFailed, where + "/metrics", "cannot create group: " + errorText());
      return false;
    }
    for (const auto& [name, met] : run.metrics) {
      if (name.find('.') != std::string::npos) {
        st->add(C::InvalidArgument, where + "/metrics", "metric name '" + name + "' contains '.'");
        return false;
      }
      if (!writeAttr(m, name, met.value) || !writeAttr(m, name + ".units", met.units) ||
          !writeAttr(m, name + ".meaning", met.meaning)) {
        st->add(C::WriteFailed, where + "/metrics", "cannot write metric '" + name + "': " + errorText());
        return false;
      }
    }
  }
  for (const auto& [path, d] : run.datasets) {
    bool bad_part = false;
    for (size_t a = 0, b; a <= path.size(); a = b + 1) {
      b = path.find('/', a);
      if (b == std::string::npos) b = path.size();
      const std::string part = path.substr(a, b - a);
      bad_part = bad_part || part.empty() || part == "." || part == "..";
    }
    if (bad_part || path == layout::kMetrics || path.rfind(std::string(layout::kMetrics) + "/", 0) == 0) {
      st->add(C::InvalidArgument, where, "invalid dataset path '" + path + "'");
      return false;
    }
    if (!writeDataset(g, path, "/runs/" + id + "/" + path, d, ctx, st)) return false;
  }
  for (const auto& [path, attrs] : run.group_attrs) {
    Handle grp;
    if (pathExists(g, path))
      grp = group(H5Gopen2(g, path.c_str(), H5P_DEFAULT));
    else {
      Handle lcpl = lcplIntermediate();
      grp = group(H5Gcreate2(g, path.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT));
    }
    if (!grp.valid() || H5Iget_type(grp) != H5I_GROUP) {
      st->add(C::WriteFailed, where + "/" + path, "cannot create or open group for attributes: " + errorText());
      return false;
    }
    for (const auto& [k, v] : attrs)
      if (!writeAttr(grp, k, v)) {
        st->add(C::WriteFailed, where + "/" + path, "cannot write attribute '" + k + "': " + errorText());
        return false;
      }
  }
  return true;
}

int64_t runBytes(const Run& r) {
  int64_t n = 0;
  for (const auto& [p, d] : r.datasets) n += d.storedCount() * static_cast<int64_t>(d.elementBytes());
  return n;
}

/// A run group to copy from an existing file.
struct CopyItem {
  std::string file;
  std::string run;
  std::string as;
  std::string label;  ///< when not empty: the copied run's "label" attribute is set to it
  std::string config; ///< when not empty: the copied run's "config" attribute is set to it
};

/// Root attributes for the output file.
struct RootInfo {
  std::string created_utc;
  Attributes extra;
};

/// Writes the new runs into /runs of the open temporary file `f`, then flushes and closes it.
bool writeFreshAndClose(Handle& f, Handle& runs, const std::vector<std::pair<const Run*, std::string>>& fresh,
                        const std::string& target, WriteCtx& ctx, Status* st) {
  for (const auto& [r, id] : fresh)
    if (!writeRun(runs, *r, id, ctx, st)) return false;
  runs.reset();
  if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0 || !f.reset()) {
    st->add(C::WriteFailed, target, "cannot flush/close the HDF5 file: " + errorText());
    return false;
  }
  return true;
}

/// The end of every save: a last chance to cancel, the test pause, then the atomic commit.
void commitWritten(TempFile* tmp, const std::string& real, const std::string& target, WriteCtx& ctx, Status* st,
                   bool durable = true) {
  if (!progress(ctx, "committing", st)) return;
  pauseBeforeCommitIfAsked();
  commitTemp(tmp, real, target, st, durable);
}

/// The one place files are produced: temp file ← root attrs, copied runs, new runs; commit.
Status produce(const std::string& target, const RootInfo& root, const std::vector<CopyItem>& copies,
               const std::vector<std::pair<const Run*, std::string>>& fresh, const WriteOptions& opt,
               bool durable = true) {
  quietErrors();
  Status st;
  if (target.empty()) {
    st.add(C::InvalidArgument, target, "empty output path");
    return st;
  }
  std::string real; // the file the rename replaces (symbolic links resolved)
  if (!resolveTarget(target, &real, &st)) return st;
  std::error_code ec;
  if (fs::is_directory(real, ec)) {
    st.add(C::WriteFailed, target, "the output path is a directory");
    return st;
  }
  if (!targetWritable(real, target, &st)) return st;
  TempFile tmp;
  if (!makeTemp(real, &tmp, &st)) return st;

  WriteCtx ctx{&opt, target};
  ctx.total_bytes = 0;
  for (const auto& [r, id] : fresh) ctx.total_bytes += runBytes(*r);
  {
    Handle f = file(H5Fcreate(tmp.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    if (!f.valid()) {
      st.add(C::WriteFailed, target, "cannot create HDF5 file '" + tmp.path + "': " + errorText());
      return st;
    }
    Attributes ra = root.extra;
    ra["application"] = std::string("FP8 Lab");
    ra["format_version"] = static_cast<int64_t>(kSessionFormatVersion);
    ra["app_version"] = std::string(FP8LAB_VERSION);
    ra["created_utc"] = root.created_utc.empty() ? utcNow() : root.created_utc;
    ra["modified_utc"] = utcNow();
    for (const auto& [k, v] : ra)
      if (!writeAttr(f, k, v)) {
        st.add(C::WriteFailed, target, "cannot write root attribute '" + k + "': " + errorText());
        return st;
      }
    Handle runs = group(H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!runs.valid()) {
      st.add(C::WriteFailed, target, "cannot create /runs: " + errorText());
      return st;
    }
    // Copies, grouped by source file so each is opened once; H5Ocopy keeps each run exactly
    // (filters, byte order, attribute types, links).
    std::map<std::string, Handle> sources;
    for (const auto& c : copies) {
      auto it = sources.find(c.file);
      if (it == sources.end()) {
        quietErrors();
        Handle sf = file(H5Fopen(c.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
        if (!sf.valid()) {
          st.add(C::Corrupt, c.file, "cannot open for copying: " + errorText());
          return st;
        }
        it = sources.emplace(c.file, std::move(sf)).first;
      }
      if (opt.fault_injection && !opt.fault_injection("copy:/runs/" + c.run)) {
        st.add(C::WriteFailed, target + "#/runs/" + c.as,
               "injected write failure (test hook); the previous file is unchanged");
        return st;
      }
      if (!progress(ctx, "copying run " + c.run, &st)) return st;
      const std::string src = "/runs/" + c.run;
      if (H5Ocopy(it->second, src.c_str(), runs, c.as.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) {
        st.add(C::WriteFailed, target + "#/runs/" + c.as, "cannot copy run from '" + c.file + "': " + errorText());
        return st;
      }
      for (const auto& [name, text] : {std::pair{"label", &c.label}, std::pair{"config", &c.config}}) {
        if (text->empty()) continue;
        Handle g = group(H5Gopen2(runs, c.as.c_str(), H5P_DEFAULT));
        if (!g.valid() || !writeAttr(g, name, *text)) {
          st.add(C::WriteFailed, target + "#/runs/" + c.as,
                 std::string("cannot set the run's ") + name + ": " + errorText());
          return st;
        }
      }
    }
    sources.clear();
    if (!writeFreshAndClose(f, runs, fresh, target, ctx, &st)) return st;
  }
  commitWritten(&tmp, real, target, ctx, &st, durable);
  return st;
}

/// Copies the bytes of `from` into the (empty) file `to`: copy_file_range, which the kernel turns
/// into a reflink (btrfs, XFS) or an in-kernel copy where it can, else read / write in 4 MiB steps.
/// `done` (bytes copied so far) drives the progress. False with the reason in *st.
bool copyBytes(const std::string& from, const std::string& to, const std::string& shown, WriteCtx& ctx, Status* st) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  const int out = ::open(to.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  auto fail = [&](const char* what) {
    st->add(C::WriteFailed, shown,
            std::string(what) + ": " + std::strerror(errno) + "; the previous file is unchanged");
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    return false;
  };
  if (in < 0) return fail("cannot read the session to copy it");
  if (out < 0) return fail("cannot write the temporary file");
  if (ctx.opt->fault_injection && !ctx.opt->fault_injection("copy:file")) {
    errno = EIO;
    return fail("injected write failure (test hook)");
  }
  struct stat sst {};
  if (::fstat(in, &sst) != 0) return fail("cannot stat the session");
  off_t left = sst.st_size;
  bool kernel_copy = true;
  std::vector<char> buf;
  const off_t step = off_t(64) << 20; // progress (and a chance to cancel) every 64 MiB
  while (left > 0) {
    ssize_t n = -1;
    if (kernel_copy) {
      n = ::copy_file_range(in, nullptr, out, nullptr, size_t(std::min(left, step)), 0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP || errno == EPERM)) {
        kernel_copy = false; // another filesystem or an old kernel: copy through user space
        continue;
      }
    } else {
      if (buf.empty()) buf.resize(size_t(4) << 20);
      const ssize_t r = ::read(in, buf.data(), size_t(std::min<off_t>(left, off_t(buf.size()))));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return fail("cannot read the session to copy it");
      for (ssize_t w = 0; w < r;) {
        const ssize_t k = ::write(out, buf.data() + w, size_t(r - w));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return fail("cannot write the temporary file");
        w += k;
      }
      n = r;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot copy the session into the temporary file");
    if (n == 0) break; // the file shrank under us: the HDF5 open below reports a damaged copy
    left -= n;
    ctx.done_bytes += n;
    if (!progress(ctx, "copying the session", st)) {
      ::close(in);
      ::close(out);
      return false;
    }
  }
  ::close(in);
  if (::close(out) != 0) return fail("cannot write the temporary file");
  return true;
}

/// An append that costs the new runs, not the file: the session's bytes are copied to a temporary
/// file beside it (copyBytes), the new runs are written into that copy by libhdf5 (the runs
/// already there are not touched: their objects stay byte for byte as they were), modified_utc
/// and app_version are updated, then the same atomic commit as every save (fsync, rename, fsync of
/// the directory). `target` must be a valid FP8 Lab session (existingRuns checked it).
Status appendToCopy(const std::string& target, const std::vector<std::pair<const Run*, std::string>>& fresh,
                    const WriteOptions& opt) {
  quietErrors();
  Status st;
  std::string real;
  if (!resolveTarget(target, &real, &st)) return st;
  if (!targetWritable(real, target, &st)) return st;
  TempFile tmp;
  if (!makeTemp(real, &tmp, &st)) return st;
  WriteCtx ctx{&opt, target};
  std::error_code ec;
  ctx.total_bytes = int64_t(fs::file_size(real, ec));
  for (const auto& [r, id] : fresh) ctx.total_bytes += runBytes(*r);
  if (!copyBytes(real, tmp.path, target, ctx, &st)) return st;
  {
    Handle f = file(H5Fopen(tmp.path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    if (!f.valid()) {
      st.add(C::WriteFailed, target, "cannot open the copy of the session for appending: " + errorText());
      return st;
    }
    if (!writeAttr(f, "modified_utc", utcNow()) || !writeAttr(f, "app_version", std::string(FP8LAB_VERSION))) {
      st.add(C::WriteFailed, target, "cannot update the root attributes: " + errorText());
      return st;
    }
    Handle runs = group(H5Gopen2(f, "runs", H5P_DEFAULT));
    if (!runs.valid()) {
      st.add(C::WriteFailed, target, "cannot open /runs in the copy: " + errorText());
      return st;
    }
    if (!writeFreshAndClose(f, runs, fresh, target, ctx, &st)) return st;
  }
  commitWritten(&tmp, real, target, ctx, &st);
  return st;
}

/// Validates an existing session and lists its run groups (all of them, also damaged ones, so a
/// rewrite loses nothing) and its root info.
bool existingRuns(const std::string& path, std::vector<std::string>* runs, RootInfo* root, Status* st) {
  auto r = SessionReader::open(path);
  if (!r.ok()) {
    st->merge(r);
    bool unreadable = false;
    for (const auto& i : r.issues) unreadable = unreadable || i.code == C::PermissionDenied;
    st->add(C::WriteFailed, path,
            unreadable ? "cannot read the existing file to keep its runs; nothing was written"
                       : "refusing to modify a file that is not a valid FP8 Lab session (file unchanged)");
    return false;
  }
  root->created_utc = r.value->info().created_utc;
  for (const auto& [k, v] : r.value->info().attrs)
    if (k != "application" && k != "format_version" && k != "app_version" && k != "created_utc" && k != "modified_utc")
      root->extra[k] = v;
  r.value.reset();
  quietErrors();
  Handle f = file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f.valid()) {
    st->add(C::Corrupt, path, errorText());
    return false;
  }
  Handle g = group(H5Gopen2(f, "runs", H5P_DEFAULT));
  if (!g.valid()) {
    st->add(C::MissingGroup, path + "#/runs", errorText());
    return false;
  }
  *runs = linkNames(g);
  std::sort(runs->begin(), runs->end());
  return true;
}

std::string uniqueId(const std::string& want, const std::set<std::string>& taken) {
  if (!taken.count(want)) return want;
  for (int i = 2;; ++i) {
    std::string c = want + "-" + std::to_string(i);
    if (!taken.count(c)) return c;
  }
}

/// Resolves `path` and takes its writer lock (session_lock.h) as opt.lock says; nullptr, with the
/// reason in *st, when it cannot (another writer and no waiting, a timeout, a cancel).
std::unique_ptr<SessionLock> lockFor(const std::string& path, const WriteOptions& opt, Status* st) {
  if (path.empty()) return nullptr; // produce() reports the empty path
  std::string real;
  if (!resolveTarget(path, &real, st)) return nullptr;
  return SessionLock::acquire(real, opt.lock, opt.progress, st);
}

/// writeSessionItems without taking the lock (its callers hold it).
Status writeItemsLocked(const std::string& path, const std::vector<SaveItem>& items, const WriteOptions& opt);

} // namespace

Status writeSession(const std::string& path, const Session& session, const WriteOptions& opt) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  std::set<std::string> ids;
  std::vector<std::pair<const Run*, std::string>> fresh;
  for (const auto& r : session.runs) {
    if (!ids.insert(r.id).second) {
      st.add(C::DuplicateRun, path, "run id '" + r.id + "' appears twice");
      return st;
    }
    fresh.emplace_back(&r, r.id);
  }
  RootInfo root{session.created_utc, session.attrs};
  return produce(path, root, {}, fresh, opt);
}

Status appendRuns(const std::string& path, const std::vector<Run>& runs, const WriteOptions& opt,
                  std::vector<std::string>* assigned_ids) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  std::vector<std::string> existing;
  RootInfo root;
  std::error_code ec;
  const bool had_file = fs::exists(path, ec);
  if (had_file && !existingRuns(path, &existing, &root, &st)) return st;
  std::set<std::string> taken(existing.begin(), existing.end());
  std::set<std::string> replaced;
  std::vector<std::pair<const Run*, std::string>> fresh;
  std::set<std::string> fresh_ids;
  for (const auto& r : runs) {
    std::string id = r.id;
    if (taken.count(id) || fresh_ids.count(id)) {
      switch (opt.on_conflict) {
      case WriteOptions::OnConflict::Fail:
        st.add(C::DuplicateRun, path + "#/runs/" + id, "a run with this id already exists (file unchanged)");
        return st;
      case WriteOptions::OnConflict::Replace:
        if (fresh_ids.count(id)) {
          st.add(C::DuplicateRun, path, "run id '" + id + "' given twice");
          return st;
        }
        replaced.insert(id);
        break;
      case WriteOptions::OnConflict::Rename: {
        std::set<std::string> all = taken;
        all.insert(fresh_ids.begin(), fresh_ids.end());
        id = uniqueId(id, all);
        break;
      }
      }
    }
    fresh_ids.insert(id);
    fresh.emplace_back(&r, id);
    if (assigned_ids) assigned_ids->push_back(id);
  }
  if (had_file && replaced.empty()) {
    // Nothing replaced: append to a byte copy of the file (the cost of the new runs plus a file
    // copy, which the kernel may turn into a reflink) instead of copying every run through libhdf5.
    st.merge(appendToCopy(path, fresh, opt));
    if (!st.ok() && assigned_ids) assigned_ids->clear();
    return st;
  }
  std::vector<CopyItem> copies;
  for (const auto& e : existing)
    if (!replaced.count(e)) copies.push_back({path, e, e, {}, {}});
  st.merge(produce(path, root, copies, fresh, opt));
  if (!st.ok() && assigned_ids) assigned_ids->clear();
  return st;
}

Status writeSessionItems(const std::string& path, const std::vector<SaveItem>& items, const WriteOptions& opt) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  st.merge(writeItemsLocked(path, items, opt));
  return st;
}

namespace {
Status writeItemsLocked(const std::string& path, const std::vector<SaveItem>& items, const WriteOptions& opt) {
  Status st;
  std::set<std::string> ids;
  std::vector<std::pair<const Run*, std::string>> fresh;
  std::vector<CopyItem> copies;
  std::map<std::string, std::unique_ptr<SessionReader>> sources; // each source validated once
  for (const auto& it : items) {
    const std::string id = it.run ? it.run->id : it.id;
    if (!ids.insert(id).second) {
      st.add(C::DuplicateRun, path, "run id '" + id + "' given twice");
      return st;
    }
    if (it.run) {
      fresh.emplace_back(it.run, id);
      continue;
    }
    std::string why;
    if (!isValidRunId(id, &why)) {
      st.add(C::InvalidArgument, path + "#/runs/" + id, why);
      return st;
    }
    auto src = sources.find(it.file);
    if (src == sources.end()) {
      auto r = SessionReader::open(it.file); // the source must be a valid session holding the run
      if (!r.ok()) {
        st.merge(r);
        st.add(C::WriteFailed, path, "cannot copy runs from '" + it.file + "'; nothing was written");
        return st;
      }
      src = sources.emplace(it.file, std::move(r.value)).first;
    }
    if (!src->second->info().find(it.run_id)) {
      st.add(C::NotFound, it.file + "#/runs/" + it.run_id, "no such run to copy; nothing was written");
      return st;
    }
    copies.push_back({it.file, it.run_id, id, it.label, {}});
  }
  sources.clear();
  st.merge(produce(path, RootInfo{}, copies, fresh, opt));
  return st;
}
} // namespace

Status saveSessionMerging(const std::string& path, const std::vector<SaveItem>& items,
                          const std::vector<std::string>& known, const WriteOptions& opt, SaveMerge* merge) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) {
    st.merge(writeItemsLocked(path, items, opt));
    return st;
  }
  std::vector<std::string> on_disk;
  RootInfo root;
  if (!existingRuns(path, &on_disk, &root, &st)) return st;
  const std::set<std::string> disk(on_disk.begin(), on_disk.end());
  const std::set<std::string> seen(known.begin(), known.end());
  std::string real;
  if (!resolveTarget(path, &real, &st)) return st;
  auto samePath = [&](const std::string& f) {
    std::error_code e2;
    return f == path || f == real || fs::equivalent(f, real, e2);
  };
  SaveMerge m;
  std::vector<SaveItem> all;
  std::set<std::string> taken;
  for (const SaveItem& it : items) {
    if (!it.run && samePath(it.file) && !disk.count(it.run_id)) {
      m.vanished.push_back(it.run_id);
      continue;
    }
    all.push_back(it);
    taken.insert(it.run ? it.run->id : it.id);
  }
  for (const std::string& id : on_disk) {
    if (seen.count(id)) continue;
    const std::string as = uniqueId(id, taken);
    taken.insert(as);
    all.push_back(SaveItem{nullptr, path, id, as, {}});
    m.kept.emplace_back(id, as);
  }
  st.merge(writeItemsLocked(path, all, opt));
  if (merge && st.ok()) *merge = std::move(m);
  return st;
}

Status deleteRun(const std::string& path, const std::string& run_id, const WriteOptions& opt) {
  return deleteRuns(path, {run_id}, opt);
}

Status deleteRuns(const std::string& path, const std::vector<std::string>& run_ids, const WriteOptions& opt) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  if (run_ids.empty()) {
    st.add(C::InvalidArgument, path, "no run id to delete");
    return st;
  }
  std::vector<std::string> existing;
  RootInfo root;
  if (!existingRuns(path, &existing, &root, &st)) return st;
  // Every id first: a partial delete followed by "no such run" would change the file and say not.
  const std::set<std::string> gone(run_ids.begin(), run_ids.end());
  std::vector<std::string> missing;
  for (const auto& id : run_ids)
    if (std::find(existing.begin(), existing.end(), id) == existing.end() &&
        std::find(missing.begin(), missing.end(), id) == missing.end())
      missing.push_back(id);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    st.add(C::NotFound, missing.size() == 1 ? path + "#/runs/" + missing[0] : path,
           (missing.size() == 1 ? "no such run" : "no such runs: " + list) + " (nothing deleted, file unchanged)");
    return st;
  }
  std::vector<CopyItem> copies;
  for (const auto& e : existing)
    if (!gone.count(e)) copies.push_back({path, e, e, {}, {}});
  st.merge(produce(path, root, copies, {}, opt));
  return st;
}

namespace {

/// A run made from another run of its file names that run in its config's "from_run" (the GEMM
/// on a training run's weights, WeightGemmSpec::configJson). Sets the config of each copy in
/// copies[first, end) whose run, as `info` lists it, names a run of `renamed` (old id -> new id)
/// to the same config with from_run the new id (re-serialised as nlohmann's dump(2), the form
/// those configs are written in), and adds a note "IN: run R made from A: its from_run is now B".
void followFromRun(const SessionInfo& info, const std::map<std::string, std::string>& renamed,
                   std::vector<CopyItem>& copies, size_t first, const std::string& in,
                   std::vector<std::string>* notes) {
  if (renamed.empty()) return;
  for (size_t c = first; c < copies.size(); ++c) {
    const RunInfo* ri = info.find(copies[c].run);
    if (!ri) continue;
    Json cfg = Json::parse(ri->config_json, nullptr, false);
    if (!cfg.is_object() || !cfg.contains("from_run") || !cfg["from_run"].is_string()) continue;
    const auto to = renamed.find(cfg["from_run"].get<std::string>());
    if (to == renamed.end()) continue;
    cfg["from_run"] = to->second;
    copies[c].config = cfg.dump(2);
    if (notes)
      notes->push_back(in + ": run " + copies[c].as + " made from " + to->first + ": its from_run is now " +
                       to->second);
  }
}

} // namespace

Status renameRun(const std::string& path, const std::string& from, const std::string& to, const WriteOptions& opt) {
  Status st;
  const auto lock = lockFor(path, opt, &st);
  if (!lock && !path.empty()) return st;
  std::string why;
  if (!isValidRunId(to, &why)) {
    st.add(C::InvalidArgument, path, why);
    return st;
  }
  std::vector<std::string> existing;
  RootInfo root;
  if (!existingRuns(path, &existing, &root, &st)) return st;
  if (std::find(existing.begin(), existing.end(), from) == existing.end()) {
    st.add(C::NotFound, path + "#/runs/" + from, "no such run (file unchanged)");
    return st;
  }
  if (from != to && std::find(existing.begin(), existing.end(), to) != existing.end()) {
    st.add(C::DuplicateRun, path + "#/runs/" + to, "a run with the new id already exists (file unchanged)");
    return st;
  }
  std::vector<CopyItem> copies;
  for (const auto& e : existing) copies.push_back({path, e, e == from ? to : e, {}, {}});
  if (from != to)
    if (auto r = SessionReader::open(path); r.ok())
      followFromRun(r.value->info(), {{from, to}}, copies, 0, path, nullptr);
  st.merge(produce(path, root, copies, {}, opt));
  return st;
}

// mergeSessions (session.h). The input skipped while `out` does not exist is the one naming the
// same path (absolute, lexically normal); its note is "OUT does not exist yet: skipped as an input
// (the merge creates it)"; other missing inputs stay errors.
Status mergeSessions(const std::string& out, const std::vector<std::string>& given, const WriteOptions& opt,
                     std::vector<std::string>* notes) {
  Status st;
  if (given.empty()) {
    st.add(C::InvalidArgument, out, "no input files");
    return st;
  }
  const auto lock = lockFor(out, opt, &st);
  if (!lock && !out.empty()) return st;
  // `merge all.h5 all.h5 shard-*.h5` before all.h5 exists: the output named as an input is
  // skipped (nothing at that path: not even a dangling link), when another input remains.
  std::vector<std::string> inputs;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(out, ec))) {
    const auto same = [](const std::string& a, const std::string& b) {
      std::error_code e1, e2;
      const fs::path pa = fs::absolute(a, e1).lexically_normal(), pb = fs::absolute(b, e2).lexically_normal();
      return !e1 && !e2 && pa == pb;
    };
    for (const auto& in : given)
      if (!same(in, out)) inputs.push_back(in);
    if (!inputs.empty() && inputs.size() < given.size() && notes)
      notes->push_back(out + " does not exist yet: skipped as an input (the merge creates it)");
  }
  if (inputs.empty()) inputs = given;
  // An existing output that is not one of the inputs would be replaced, losing its runs (and a
  // text or foreign HDF5 file there would be turned into a session).
  if (fs::exists(out, ec)) {
    bool is_input = false;
    for (const auto& in : inputs) {
      std::error_code e2;
      is_input = is_input || fs::equivalent(out, in, e2);
    }
    if (!is_input) {
      std::vector<std::string> its_runs;
      RootInfo ignored;
      // The rule of appendRuns (`run --out`): never replace a file that is not a session.
      if (!existingRuns(out, &its_runs, &ignored, &st)) return st;
      if (!opt.replace_existing) {
        st.add(C::WriteFailed, out,
               "already exists and is not one of the inputs: merging would replace it and lose its " +
                   std::to_string(its_runs.size()) +
                   " run(s) (file unchanged). To merge into it, name it as an input too (merge OUT OUT IN...); "
                   "to replace it, use --force");
        return st;
      }
    }
  }
  std::vector<CopyItem> copies;
  std::set<std::string> taken;
  RootInfo root;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    auto r = SessionReader::open(in);
    bool clean = r.ok();
    for (const auto& i : r.issues) clean = clean && i.severity == Severity::Info;
    if (!clean) {
      st.merge(r);
      st.add(C::WriteFailed, out, "input '" + in + "' is not a clean FP8 Lab session; nothing written");
      return st;
    }
    if (i == 0) root.created_utc = r.value->info().created_utc;
    std::map<std::string, std::string> renamed; // this input's run id -> its id in `out`
    size_t first_copy = copies.size();          // copies from here on are this input's
    for (const auto& run : r.value->info().runs) {
      std::string as = run.id;
      if (taken.count(as)) {
        switch (opt.on_conflict) {
        case WriteOptions::OnConflict::Fail:
          st.add(C::DuplicateRun, in + "#/runs/" + as, "run id also present in an earlier input; nothing written");
          return st;
        case WriteOptions::OnConflict::Replace: {
          auto it = std::find_if(copies.begin(), copies.end(), [&](const CopyItem& c) { return c.as == as; });
          if (it != copies.end()) {
            if (static_cast<size_t>(it - copies.begin()) < first_copy) --first_copy;
            copies.erase(it);
          }
          if (notes) notes->push_back(in + ": run " + as + " replaces the earlier one");
          break;
        }
        case WriteOptions::OnConflict::Rename:
          as = uniqueId(as, taken);
          renamed[run.id] = as;
          if (notes) notes->push_back(in + ": run " + run.id + " stored as " + as);
          break;
        }
      }
      taken.insert(as);
      copies.push_back({in, run.id, as, {}, {}});
    }
    followFromRun(r.value->info(), renamed, copies, first_copy, in, notes);
  }
  st.merge(produce(out, root, copies, {}, opt));
  return st;
}

} // namespace fp8lab
