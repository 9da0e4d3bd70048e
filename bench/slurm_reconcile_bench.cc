// The Slurm front door at scale: one tidal-slurm reconcile pass (Reconciler::ReconcileOnce: read,
// convert, Sync, Admit, apply) with 100,000 pending and 5,000 running Slurm jobs, against a real
// Engine behind a real gRPC server on 127.0.0.1 (the adapter's own GrpcEngineLink). The Slurm side
// is an in-memory SlurmApi serving a generated recorded state (deterministic seed) and applying
// the adapter's writes as slurmctld would; parsing that state from Tidal's recorded JSON format
// (JsonFileApi's reader) is measured on its own. Figures: docs/benchmarks-front-doors.md, "Slurm front door".
//
// The cluster: 1,000 nodes x 8 H100 (5 blocks x 10 leaves x 5 NVLink domains x 4 nodes, topology
// through node features tidal-<level>-<value>), partition gpu on all, debug on 40; 6 drained and 2
// down. 5,000 running jobs (1-8 GPUs on one node, a few 2-16-node gangs) hold 85% of the GPUs.
// 100,000 pending job ids, all held by the gate (priority 0): 1, 2, 4, 8 GPUs on one node and
// 2-32-node gangs of 8 GPUs, 11 accounts mapped to 10 queues under 3 orgs, array records with
// pending tasks, ~3% waiting on dependencies, some --constraint, --exclude, --switches=1, --nice.
//
// Benchmarks (wall time of the pass; run pinned to one core: `make bench-slurm`):
//   BM_SlurmStateJson_Parse         JsonFileApi::Load of the recorded state (file read + parse)
//   BM_SlurmReconcile_First         a fresh adapter and a fresh engine: full resync + Admit + apply
//   BM_SlurmReconcile_Steady1pct    ~1% changed since the last pass: 50 running jobs finished, the
//                                   jobs Tidal released started, 1,000 new pending job ids, 10
//                                   pending cancelled; the engine's clock moves 10 s between passes
//   BM_SlurmReconcile_Unchanged     nothing changed since the last pass (after warm-up passes until
//                                   one writes and sends nothing); the engine's clock stands still
//   BM_SlurmReconcile_RestartResync the adapter restarts against a warm engine (a full resync that
//                                   replaces the door's objects)
// Counters: the pass's phases from ReconcileStats (ms), what it sent and wrote, cpu_ms (process
// CPU time of the pass, all threads: adapter, gRPC, engine), peak RSS of the whole process.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <unordered_map>

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include "bench/slurm_world.h"
#include "server/service.h"
#include "shim/slurm/json_state.h"
#include "shim/slurm/reconciler.h"
#include "shim/slurm/to_engine.h"

namespace tidal::slurm::bench {
namespace {

// slurmctld in memory: Load returns a copy of the records (what a libslurm read builds), writes
// change them as slurmctld would (an update of one task of an unsplit array record splits it off).
class SimSlurm final : public SlurmApi {
 public:
  SimSlurm(ClusterRecords r, std::atomic<int64_t>* now) : rec_(std::move(r)), now_(now) { Reindex(); }

  Status Load(ClusterRecords* out) override {
    *out = rec_;
    out->read_unix = now_->load();
    return Status::Ok();
  }
  Status Release(const std::string& id, const JobPin& pin, const std::string& comment) override {
    JobRecord* j = Find(id, /*split=*/true);
    if (j == nullptr) return Status::Error("release " + id + ": no such job");
    j->priority = 1000;
    j->required_nodes = pin.nodes;
    j->admin_comment = comment;
    j->state_reason = "None";
    ++writes_;
    return Status::Ok();
  }
  Status Hold(const std::string& id, const std::string& comment, const JobPin& pin) override {
    JobRecord* j = Find(id, true);
    if (j == nullptr) return Status::Error("hold " + id + ": no such job");
    j->priority = 0;
    j->required_nodes = pin.nodes;
    j->admin_comment = comment;
    j->state_reason = "JobHeldAdmin";
    ++writes_;
    return Status::Ok();
  }
  Status HoldRequeued(const std::string& id, const std::string& comment, const JobPin& pin) override {
    return Hold(id, comment, pin);
  }
  Status Shrink(const std::string&, const std::vector<std::string>&) override { return Status::Ok(); }
  Status SetComment(const std::string& id, const std::string& comment) override {
    JobRecord* j = Find(id, false);
    if (j == nullptr) return Status::Error("set comment " + id + ": no such job");
    j->admin_comment = comment;
    ++writes_;
    return Status::Ok();
  }
  Status Requeue(const std::string&) override { return Status::Ok(); }
  Status Signal(const std::string&, int, bool) override { return Status::Ok(); }
  Status Drain(const std::string&, const std::string&) override { return Status::Ok(); }
  Status Undrain(const std::string&) override { return Status::Ok(); }

  // Slurm's side between two passes.
  // Starts every job Tidal released (pending, pinned by Tidal) on its pinned nodes.
  int StartReleased() {
    int n = 0;
    for (auto& j : rec_.jobs) {
      if (StanceOf(j) != JobStance::kReleased) continue;
      j.state = JobState::kRunning;
      j.nodes = j.required_nodes;
      j.node_count = static_cast<uint32_t>(j.nodes.size());
      j.start_time = now_->load();
      ++n;
    }
    return n;
  }
  // `n` running jobs finish (gone from the read), `cancel` pending records are cancelled.
  void Finish(int n, int cancel, std::mt19937& rng) {
    std::vector<size_t> active, pending;
    for (size_t i = 0; i < rec_.jobs.size(); ++i) {
      const JobStance s = StanceOf(rec_.jobs[i]);
      if (s == JobStance::kActive) active.push_back(i);
      if (s == JobStance::kHeld) pending.push_back(i);
    }
    std::shuffle(active.begin(), active.end(), rng);
    std::shuffle(pending.begin(), pending.end(), rng);
    for (int k = 0; k < n && k < static_cast<int>(active.size()); ++k) rec_.jobs[active[static_cast<size_t>(k)]].state = JobState::kCompleted;
    for (int k = 0; k < cancel && k < static_cast<int>(pending.size()); ++k) {
      rec_.jobs[pending[static_cast<size_t>(k)]].state = JobState::kCancelled;
    }
    Compact();
  }
  // New pending jobs: at least `ids` job ids (array tasks counted).
  void Submit(int ids, JobGen& gen) {
    for (int made = 0, k = 0; made < ids; made += k) rec_.jobs.push_back(NextPending(gen, now_->load(), &k));
    Reindex();
  }
  int64_t writes() const { return writes_; }

 private:
  JobRecord* Find(const std::string& id, bool split) {
    if (auto it = index_.find(id); it != index_.end()) return &rec_.jobs[it->second];
    const size_t us = id.find('_');
    if (us == std::string::npos) return nullptr;
    auto base = index_.find(id.substr(0, us));
    if (base == index_.end()) return nullptr;
    JobRecord& arr = rec_.jobs[base->second];
    const uint32_t task = static_cast<uint32_t>(std::stoul(id.substr(us + 1)));
    auto t = std::find(arr.pending_array_tasks.begin(), arr.pending_array_tasks.end(), task);
    if (t == arr.pending_array_tasks.end()) return nullptr;
    if (!split) return &arr;
    JobRecord one = arr;
    arr.pending_array_tasks.erase(t);
    if (arr.pending_array_tasks.empty()) arr.state = JobState::kCancelled;  // its last task: the record is that task now
    one.id = id;
    one.job_id = next_split_id_++;
    one.array_task_id = task;
    one.pending_array_tasks.clear();
    rec_.jobs.push_back(std::move(one));
    index_[id] = rec_.jobs.size() - 1;
    return &rec_.jobs.back();
  }
  void Compact() {
    std::erase_if(rec_.jobs, [](const JobRecord& j) { return StanceOf(j) == JobStance::kFinished; });
    Reindex();
  }
  void Reindex() {
    index_.clear();
    for (size_t i = 0; i < rec_.jobs.size(); ++i) index_[rec_.jobs[i].id] = i;
  }

  ClusterRecords rec_;
  std::atomic<int64_t>* now_;
  std::unordered_map<std::string, size_t> index_;
  uint32_t next_split_id_ = 50000000;
  int64_t writes_ = 0;
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// A real engine behind a real gRPC server, the adapter's gRPC link, the in-memory slurmctld.
struct Harness {
  std::atomic<int64_t> now{kStartUnix};
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EngineService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<EngineLink> link;
  std::unique_ptr<SimSlurm> slurm;
  std::unique_ptr<Reconciler> rec;

  explicit Harness(const World& w) {
    engine = std::move(Engine::Create(w.engine_cfg, [this] { return now.load(); })).value();
    service = std::make_unique<EngineService>(*engine);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service.get());
    server = b.BuildAndStart();
    slurm = std::make_unique<SimSlurm>(w.records, &now);
    NewAdapter(w);
  }
  // A fresh adapter process: its own link and reconciler (the next pass is a full resync).
  void NewAdapter(const World& w) {
    rec.reset();
    if (link) link->Close();
    link = NewGrpcEngineLink("127.0.0.1:" + std::to_string(port));
    rec = std::make_unique<Reconciler>(w.cfg, slurm.get(), link.get());
  }
  ~Harness() {
    rec.reset();
    link->Close();
    server->Shutdown();
  }
  // One timed pass; *cpu gets its process CPU time.
  ReconcileStats Pass(double* wall, double* cpu) {
    const double c0 = CpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    ReconcileStats st = rec->ReconcileOnce();
    *wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    *cpu = CpuSeconds() - c0;
    if (!st.status.ok()) std::fprintf(stderr, "reconcile: %s\n", st.status.ToString().c_str());
    return st;
  }
};

// Averages of the passes' stats as counters.
struct Acc {
  double n = 0, wall = 0, cpu = 0, read = 0, convert = 0, sync = 0, admit = 0, apply = 0;
  double jobs = 0, pending = 0, running = 0, skipped = 0, upserts = 0, deletes = 0, released = 0, held = 0,
         comments = 0, tried = 0, errors = 0;
  void Add(const ReconcileStats& s, double w, double c) {
    n += 1;
    wall += w;
    cpu += c;
    read += s.read_s;
    sync += s.sync_s;
    admit += s.admit_s;
    apply += s.apply_s;
    convert += s.convert_s;
    jobs += static_cast<double>(s.jobs);
    pending += static_cast<double>(s.pending);
    running += static_cast<double>(s.running);
    skipped += static_cast<double>(s.skipped);
    upserts += static_cast<double>(s.upserts);
    deletes += static_cast<double>(s.deletes);
    released += static_cast<double>(s.released);
    held += static_cast<double>(s.held);
    comments += static_cast<double>(s.comments);
    tried += static_cast<double>(s.admit_tried);
    errors += s.status.ok() && s.admitted ? 0 : 1;
  }
  void Report(benchmark::State& state) const {
    auto& c = state.counters;
    const double k = n > 0 ? 1 / n : 0;
    c["cpu_ms"] = 1000 * cpu * k;
    c["read_ms"] = 1000 * read * k;
    c["convert_ms"] = 1000 * convert * k;
    c["sync_ms"] = 1000 * sync * k;
    c["admit_ms"] = 1000 * admit * k;
    c["apply_ms"] = 1000 * apply * k;
    c["job_ids"] = jobs * k;
    c["pending"] = pending * k;
    c["running"] = running * k;
    c["skipped"] = skipped * k;
    c["sent"] = (upserts + deletes) * k;
    c["released"] = released * k;
    c["held"] = held * k;
    c["comments"] = comments * k;
    c["tried"] = tried * k;
    c["failed_passes"] = errors;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    c["peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  }
};

void BM_SlurmStateJson_Parse(benchmark::State& state) {
  const World& w = TheWorld();
  const std::string text = WriteStateJson(w.records);
  const std::string path = "/tmp/tidal-slurm-bench-state.json";
  std::ofstream(path, std::ios::binary) << text;
  JsonFileApi api(path);
  for (auto _ : state) {
    ClusterRecords r;
    Status st = api.Load(&r);  // reads the file and parses it
    if (!st.ok() || r.jobs.size() != w.records.jobs.size()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(r);
  }
  state.counters["json_mib"] = static_cast<double>(text.size()) / (1 << 20);
  state.counters["records"] = static_cast<double>(w.records.jobs.size() + w.records.nodes.size());
}

void BM_SlurmReconcile_First(benchmark::State& state) {
  const World& w = TheWorld();
  Acc acc;
  for (auto _ : state) {
    auto h = std::make_unique<Harness>(w);
    double wall = 0, cpu = 0;
    const ReconcileStats st = h->Pass(&wall, &cpu);
    acc.Add(st, wall, cpu);
    state.SetIterationTime(wall);
    h.reset();  // not timed
  }
  acc.Report(state);
  state.counters["busy_gpu_pct"] = 100.0 * static_cast<double>(w.busy_gpus) / static_cast<double>(w.usable_gpus);
}

// A harness after its first pass and `warm` passes of Slurm starting what Tidal released.
std::unique_ptr<Harness> Warm(const World& w, int warm) {
  auto h = std::make_unique<Harness>(w);
  double wall = 0, cpu = 0;
  h->Pass(&wall, &cpu);
  for (int i = 0; i < warm; ++i) {
    h->now += 10;
    h->slurm->StartReleased();
    h->Pass(&wall, &cpu);
  }
  return h;
}

void BM_SlurmReconcile_Steady1pct(benchmark::State& state) {
  const World& w = TheWorld();
  auto h = Warm(w, 2);
  std::mt19937 rng(7);
  Acc acc;
  for (auto _ : state) {
    h->now += 10;
    h->slurm->StartReleased();
    h->slurm->Finish(50, 10, rng);
    h->slurm->Submit(1000, *w.gen);
    double wall = 0, cpu = 0;
    const ReconcileStats st = h->Pass(&wall, &cpu);
    acc.Add(st, wall, cpu);
    state.SetIterationTime(wall);
  }
  acc.Report(state);
}

void BM_SlurmReconcile_Unchanged(benchmark::State& state) {
  const World& w = TheWorld();
  auto h = Warm(w, 2);
  // Until a pass changes nothing (the comment budget spreads the waiting reasons over passes).
  int warm = 0;
  for (double wall = 0, cpu = 0; warm < 200; ++warm) {
    h->slurm->StartReleased();
    const ReconcileStats st = h->Pass(&wall, &cpu);
    if (st.released + st.held + st.comments + st.upserts + st.deletes == 0) break;
  }
  Acc acc;
  for (auto _ : state) {
    double wall = 0, cpu = 0;
    const ReconcileStats st = h->Pass(&wall, &cpu);
    acc.Add(st, wall, cpu);
    state.SetIterationTime(wall);
  }
  acc.Report(state);
  state.counters["warmup_passes"] = warm;
}

void BM_SlurmReconcile_RestartResync(benchmark::State& state) {
  const World& w = TheWorld();
  auto h = Warm(w, 2);
  Acc acc;
  for (auto _ : state) {
    h->NewAdapter(w);  // not timed: the old stream closes, the same holder comes back
    h->now += 10;
    double wall = 0, cpu = 0;
    const ReconcileStats st = h->Pass(&wall, &cpu);
    acc.Add(st, wall, cpu);
    state.SetIterationTime(wall);
  }
  acc.Report(state);
}

BENCHMARK(BM_SlurmStateJson_Parse)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SlurmReconcile_First)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);
BENCHMARK(BM_SlurmReconcile_Steady1pct)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(10);
BENCHMARK(BM_SlurmReconcile_Unchanged)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(10);
BENCHMARK(BM_SlurmReconcile_RestartResync)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

}  // namespace
}  // namespace tidal::slurm::bench
