// A Vulkan program's calls (docs/vulkan.md): its buffers, its command buffers replaying the
// recording, and a call.
//
// A call copies the inputs into the program's device buffers, submits the one command buffer
// (uploads, every dispatch with barriers only where a dispatch reads or overwrites what an
// earlier one wrote, readbacks), waits once, and copies the results out. A program with
// collectives or prints is one command buffer per segment between its host steps, which start
// each collective (on the communication thread, while the next segments run) and finish it
// before the first segment that reads its result, or read a print's values back. The user's arrays are written only
// after the device reports success. The JIT's executable and a loaded artifact run through this class.
#include "runtime/vulkan/program.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <new>

#include "fluxion/error.h"
#include "fluxion/profile.h"
#include "runtime/counters.h"
#include "runtime/debug_print.h"
#include "runtime/host_memory.h"
#include "runtime/profiler.h"
#include "runtime/vulkan/device_array.h"
#include "runtime/vulkan/pipelines.h"

namespace fluxion::vulkan {
namespace {

int64_t bytes(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

// Dispatches timed per call when profiling (the first ones of a longer recording).
constexpr uint32_t kMaxProfiledDispatches = 1u << 16;

}  // namespace

class VulkanProgram::State {
 public:
  State(Context& ctx, VulkanLayout layout, Recording recording, Regrow regrow)
      : layout_(std::move(layout)), ctx_(ctx), regrow_(std::move(regrow)) {
    AllocatingFor allocating(layout_.label);
    MemoryPool& dev = *ctx_.device_pool;
    host_io_ = dev.host_visible();
    for (const TensorType& t : layout_.inputs) {
      inputs_.emplace_back(dev, bytes(t));
      if (!host_io_) input_staging_.emplace_back(*ctx_.staging_pool, bytes(t));
    }
    arena_ = Buffer(dev, std::max<int64_t>(layout_.arena_bytes, 16));
    status_ = Buffer(*ctx_.staging_pool, 16);
    size_t io_bytes = 8 * (inputs_.size() + layout_.outputs.size() + 3);
    io_table_ = Buffer(dev, io_bytes);
    if (!host_io_) io_staging_ = Buffer(*ctx_.staging_pool, io_bytes);
    auto pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = ctx_.queue_family;
    check(vkCreateCommandPool(ctx_.device, &pi, nullptr, &pool_), "vkCreateCommandPool");
    auto fi = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(vkCreateFence(ctx_.device, &fi, nullptr, &fence_), "vkCreateFence");
    try {
      install(std::move(recording));
    } catch (...) {
      release();
      throw;
    }
    closer_ = add_closer([this] { release(); });
  }

  ~State() {
    remove_closer(closer_);
    if (!closed()) release();
  }

  // The results stay in device memory (Arrays read back on first host access).
  std::vector<Array> run(const std::vector<Array>& inputs) const {
    std::vector<std::shared_ptr<VulkanBuffer>> results = call(inputs);
    std::vector<Array> out;
    for (size_t k = 0; k < layout_.outputs.size(); ++k)
      out.push_back(Array::from_device(layout_.outputs[k], std::move(results[k])));
    return out;
  }

  // The outputs are updated in place as the caller sees them: each output's storage (shared by
  // its copies) becomes its result's device buffer, which stays on the device as run's results
  // do, and the buffer it held before (an input's, for an update in place) returns to the pool
  // for the next call's results. Nothing is changed when the call fails.
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
    std::vector<std::shared_ptr<VulkanBuffer>> results = call(inputs);
    for (size_t k = 0; k < outputs.size(); ++k) outputs[k].assign_device(std::move(results[k]));
  }

  const VulkanLayout& layout() const { return layout_; }
  Recording recording() const {
    std::lock_guard<std::mutex> lock(mu_);
    return recording_;
  }

 private:
  // Runs the program on `inputs` (read in place when they are already in this device's memory)
  // into new device buffers, which it returns.
  std::vector<std::shared_ptr<VulkanBuffer>> call(const std::vector<Array>& inputs) const {
    check_open(layout_.label.c_str());
    AllocatingFor allocating(layout_.label);
    // The results are read back to host memory on first access: FLUXION_MEMORY_LIMIT counts them
    // (the device memory they take first is FLUXION_VULKAN_MEMORY_LIMIT's).
    runtime::check_host_memory(layout_.label, runtime::host_bytes(layout_.outputs), 0);
    std::vector<std::shared_ptr<VulkanBuffer>> results;
    for (const TensorType& t : layout_.outputs) results.push_back(std::make_shared<VulkanBuffer>(ctx_, bytes(t)));
    // Inputs already in this device's memory, held for the call; null for host inputs.
    std::vector<std::shared_ptr<const VulkanBuffer>> resident(inputs.size());
    std::vector<uint64_t> io;
    for (size_t i = 0; i < inputs.size(); ++i) {
      resident[i] = std::dynamic_pointer_cast<const VulkanBuffer>(inputs[i].device_buffer());
      io.push_back(resident[i] ? resident[i]->allocation().address : inputs_[i]->address);
    }
    for (const auto& r : results) io.push_back(r->allocation().address);
    io.push_back(arena_->address);
    std::lock_guard<std::mutex> lock(mu_);
    auto& c = runtime::counters();
    c.program_calls++;
    if (profiling() != profile_ || !ready_) {
      profile_ = profiling();
      install(std::move(recording_));
    }
    // Every buffer of this call exists by now; a memory block added since the command buffer
    // was recorded is only described by a newer descriptor set.
    if (ctx_.descriptors && ctx_.descriptors->generation() != descriptors_bound_) record_commands();
    io.push_back(consts_->address);
    io.push_back(status_->address);
    // Compared in place: a warm call allocates nothing for it.
    bool uploads_match = uploads_ != VK_NULL_HANDLE && uploads_from_.size() == inputs.size();
    for (size_t i = 0; i < inputs.size() && uploads_match; ++i) uploads_match = uploads_from_[i] == !resident[i];
    if (!host_io_ && !uploads_match) record_uploads(resident);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (resident[i]) continue;
      const Allocation& dst = host_io_ ? inputs_[i].get() : input_staging_[i].get();
      std::memcpy(dst.mapped, inputs[i].data(), static_cast<size_t>(bytes(layout_.inputs[i])));
    }
    for (;;) {
      std::memcpy(host_io_ ? io_table_->mapped : io_staging_->mapped, io.data(), io.size() * 8);
      std::memcpy(status_->mapped, &kStatusOk, 4);
      int32_t status = kStatusOk;
      size_t segment = 0;
      HostCollectives exchanges(recording_.collectives.size());
      // The lines of this run's prints, printed when the run is over: a run that stops to record
      // more while-loop iterations runs again, and prints them then.
      std::vector<std::string> printed;
      bool exchanged = false;
      for (; segment < cmds_.size(); ++segment) {
        // A segment between two host steps at the same place holds nothing to submit.
        bool empty = segment > 0 && segment < recording_.host_steps.size() &&
                     recording_.host_steps[segment - 1].dispatch == recording_.host_steps[segment].dispatch;
        if (!empty) submit_and_wait(segment == 0 ? uploads_ : VK_NULL_HANDLE, cmds_[segment]);
        std::memcpy(&status, status_->mapped, 4);
        if (status != kStatusOk || segment == recording_.host_steps.size()) break;
        const HostStep& step = recording_.host_steps[segment];
        if (step.kind == HostStep::Kind::Print) {
          print(recording_.prints[step.index], resident, results, printed);
          continue;
        }
        exchanged = true;
        run_host_step(step, exchanges, resident, results);
      }
      if (status >= 0) {
        for (const std::string& line : printed) runtime::emit_print(line);
      }
      c.native_calls++;
      c.kernel_launches += recording_.dispatches.size();
      // (A run stopped early left later segments' timestamps unwritten.)
      if (queries_ && segment + 1 >= cmds_.size()) report_times();
      if (profile_ && ctx_.timestamp_bits == 0) {
        runtime::report_untimed("Vulkan device " + ctx_.info.name +
                                " has no timestamps on its compute queue (timestampValidBits = 0, or disabled)");
      }
      if (status == kStatusOk) break;
      if (status > 0) {
        detail::fail("while_loop", "the loop ran past max_iters = " + std::to_string(status - kWhileMaxIters) +
                                       " iterations (raise max_iters, or check the loop condition)");
      }
      // Running again would repeat the collectives already run, which the other ranks do not.
      if (exchanged) {
        detail::fail("while_loop",
                     "an unbounded while loop ran out of recorded iterations after a collective had run; "
                     "give it max_iters to run it with collectives on the Vulkan backend");
      }
      // An unbounded while loop needs more recorded iterations: record more and run again.
      int id = -status - 1;
      if (!regrow_) {
        detail::fail("while_loop",
                     "an unbounded while loop ran out of the iterations recorded in this exported program; "
                     "give it max_iters, or save the program after a call that ran it as long");
      }
      install(regrow_(id));
      io[io.size() - 2] = consts_->address;  // the constants moved with the new recording
    }
    return results;
  }

  // The bytes at `l` for this call: an io-table entry's allocation, from byte l.off.
  Allocation located(const Loc& l, int64_t n, const std::vector<std::shared_ptr<const VulkanBuffer>>& resident,
                     const std::vector<std::shared_ptr<VulkanBuffer>>& results) const {
    size_t e = static_cast<size_t>(l.io), np = inputs_.size(), nr = results.size();
    Allocation a = e < np         ? (resident[e] ? resident[e]->allocation() : inputs_[e].get())
                   : e < np + nr  ? results[e - np]->allocation()
                   : e == np + nr ? arena_.get()
                                  : consts_.get();
    a.offset += static_cast<VkDeviceSize>(l.off);
    a.address += static_cast<VkDeviceAddress>(l.off);
    if (a.mapped) a.mapped += l.off;
    a.size = static_cast<VkDeviceSize>(n);
    return a;
  }

  // The host side of a call's collectives: each one's operand and result bytes, and its
  // exchange on the communication thread, which every path out of the call waits for.
  struct HostCollectives {
    explicit HostCollectives(size_t n) : in(n), out(n), running(n) {}
    ~HostCollectives() {
      for (std::future<void>& f : running) {
        if (f.valid()) f.wait();
      }
    }
    std::vector<std::vector<std::byte>> in, out;
    std::vector<std::future<void>> running;
  };

  // A host step between two segments of the command buffer: a collective's operand read back
  // and its exchange started, or its exchange waited for and its result written to the device.
  void run_host_step(const HostStep& step, HostCollectives& x,
                     const std::vector<std::shared_ptr<const VulkanBuffer>>& resident,
                     const std::vector<std::shared_ptr<VulkanBuffer>>& results) const {
    const HostCollective& h = recording_.collectives[step.index];
    std::vector<std::byte>& in = x.in[step.index];
    std::vector<std::byte>& out = x.out[step.index];
    if (step.kind == HostStep::Kind::Start) {
      try {
        in.resize(static_cast<size_t>(std::max<int64_t>(h.in_bytes, 1)));
        out.resize(static_cast<size_t>(std::max<int64_t>(h.out_bytes, 1)));
      } catch (const std::bad_alloc&) {
        runtime::fail_allocation(layout_.label, "a collective's operand and result on the host",
                                 std::max<int64_t>(h.in_bytes, 1) + std::max<int64_t>(h.out_bytes, 1));
      }
      if (h.in_bytes > 0)
        download(ctx_, located(h.in, h.in_bytes, resident, results), in.data(), static_cast<size_t>(h.in_bytes));
      x.running[step.index] = runtime::start_collective(h.call, in.data(), out.data());
      return;
    }
    {
      runtime::WaitTimer timer;
      x.running[step.index].get();
    }
    if (h.out_bytes > 0)
      upload(ctx_, located(h.out, h.out_bytes, resident, results), out.data(), static_cast<size_t>(h.out_bytes));
  }

  // A print's line, added to `printed` when its guard byte is set.
  void print(const HostPrint& p, const std::vector<std::shared_ptr<const VulkanBuffer>>& resident,
             const std::vector<std::shared_ptr<VulkanBuffer>>& results, std::vector<std::string>& printed) const {
    std::byte guard{};
    download(ctx_, located(p.guard, 1, resident, results), &guard, 1);
    if (guard == std::byte{0}) return;
    std::vector<std::vector<std::byte>> bytes(p.operands.size());
    std::vector<const void*> data;
    for (size_t i = 0; i < p.operands.size(); ++i) {
      const TensorType& t = p.call.types[i];
      int64_t n = t.numel() * dtype_size(t.dtype);
      bytes[i].resize(static_cast<size_t>(std::max<int64_t>(n, 1)));
      if (n > 0) download(ctx_, located(p.operands[i], n, resident, results), bytes[i].data(), static_cast<size_t>(n));
      data.push_back(bytes[i].data());
    }
    printed.push_back(runtime::format_print(p.call, data.data()));
  }

  void release() const {
    if (queries_) vkDestroyQueryPool(ctx_.device, queries_, nullptr);
    vkDestroyFence(ctx_.device, fence_, nullptr);
    vkDestroyCommandPool(ctx_.device, pool_, nullptr);
  }

  // Reads the timestamps of the call just run and hands them to the profiler.
  void report_times() const {
    std::vector<uint64_t> ts(2 * static_cast<size_t>(profiled_));
    check(vkGetQueryPoolResults(ctx_.device, queries_, 0, 2 * profiled_, ts.size() * 8, ts.data(), 8,
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    uint64_t mask = ctx_.timestamp_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << ctx_.timestamp_bits) - 1;
    double us = ctx_.timestamp_period_ns * 1e-3;
    std::vector<runtime::TimedDispatch> out;
    uint64_t t0 = ts.empty() ? 0 : ts[0] & mask;
    for (uint32_t i = 0; i < profiled_; ++i) {
      const Dispatch& d = recording_.dispatches[i];
      uint64_t a = ts[2 * i] & mask, b = ts[2 * i + 1] & mask;
      DispatchCost cost = i < recording_.costs.size() ? recording_.costs[i] : DispatchCost{};
      out.push_back({&recording_.names[static_cast<size_t>(d.name)], static_cast<double>(a - t0) * us,
                     static_cast<double>(b >= a ? b - a : 0) * us, cost.bytes, cost.flops});
    }
    runtime::report_profile(out);
  }

  // Submits `uploads` (when not null) and `cb` as one submission, and waits for both.
  void submit_and_wait(VkCommandBuffer uploads, VkCommandBuffer cb) const {
    VkCommandBuffer both[2] = {uploads, cb};
    auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = uploads ? 2 : 1;
    si.pCommandBuffers = uploads ? both : both + 1;
    {
      std::lock_guard<std::mutex> q(ctx_.queue_mu);
      check(vkQueueSubmit(ctx_.queue, 1, &si, fence_), "vkQueueSubmit");
    }
    VkResult r = vkWaitForFences(ctx_.device, 1, &fence_, VK_TRUE, UINT64_MAX);
    vkResetFences(ctx_.device, 1, &fence_);
    check(r, "vkWaitForFences");
    auto& c = runtime::counters();
    c.submissions++;
    c.fence_waits++;
  }

  // Takes `r` as the program's recording: its argument and constant tables uploaded, the
  // timestamp queries made, and its command buffers recorded. Until it succeeds the command
  // buffers may name freed buffers: calls check ready_ and install again first.
  void install(Recording r) const {
    ready_ = false;
    recording_ = std::move(r);
    device_words_ = Buffer(*ctx_.device_pool, recording_.args.size() * 8);
    consts_ = Buffer(*ctx_.device_pool, recording_.consts.size());
    if (queries_) vkDestroyQueryPool(ctx_.device, queries_, nullptr);
    queries_ = VK_NULL_HANDLE;
    profiled_ = 0;
    if (profile_ && ctx_.timestamp_bits > 0 && !recording_.dispatches.empty()) {
      profiled_ = static_cast<uint32_t>(std::min<size_t>(recording_.dispatches.size(), kMaxProfiledDispatches));
      auto qi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = 2 * profiled_;
      check(vkCreateQueryPool(ctx_.device, &qi, nullptr, &queries_), "vkCreateQueryPool");
    }
    upload(ctx_, device_words_.get(), recording_.args.data(), recording_.args.size() * 8);
    upload(ctx_, consts_.get(), recording_.consts.data(), recording_.consts.size());
    record_commands();
    ready_ = true;
  }

  // One command buffer per segment of the dispatches between host steps (one for a program
  // without collectives).
  void record_commands() const {
    size_t segments = recording_.host_steps.size() + 1;
    if (cmds_.size() < segments) {
      std::vector<VkCommandBuffer> more(segments - cmds_.size());
      auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      ai.commandPool = pool_;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = static_cast<uint32_t>(more.size());
      check(vkAllocateCommandBuffers(ctx_.device, &ai, more.data()), "vkAllocateCommandBuffers");
      cmds_.insert(cmds_.end(), more.begin(), more.end());
    }
    if (cmds_.size() > segments) {
      vkFreeCommandBuffers(ctx_.device, pool_, static_cast<uint32_t>(cmds_.size() - segments), cmds_.data() + segments);
      cmds_.resize(segments);
    }
    for (size_t k = 0; k < segments; ++k) {
      size_t first = k == 0 ? 0 : recording_.host_steps[k - 1].dispatch;
      size_t last = k + 1 < segments ? recording_.host_steps[k].dispatch : recording_.dispatches.size();
      record_segment(cmds_[k], k == 0, first, last);
    }
  }

  // The copies from staging memory that start a call on a device whose memory the host cannot
  // write: the io table and the inputs given from the host (those `resident` holds no buffer
  // for; an input already on the device is read in place). Recorded again only when which inputs come from the host
  // changes; the first segment's opening barrier makes them visible to its dispatches.
  void record_uploads(const std::vector<std::shared_ptr<const VulkanBuffer>>& resident) const {
    if (uploads_ == VK_NULL_HANDLE) {
      auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      ai.commandPool = pool_;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(vkAllocateCommandBuffers(ctx_.device, &ai, &uploads_), "vkAllocateCommandBuffers");
    }
    uploads_from_.clear();
    check(vkResetCommandBuffer(uploads_, 0), "vkResetCommandBuffer");
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    check(vkBeginCommandBuffer(uploads_, &bi), "vkBeginCommandBuffer");
    VkBufferCopy io_region{io_staging_->offset, io_table_->offset, io_table_->size};
    vkCmdCopyBuffer(uploads_, io_staging_->buffer, io_table_->buffer, 1, &io_region);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (resident[i]) continue;
      VkBufferCopy region{input_staging_[i]->offset, inputs_[i]->offset, inputs_[i]->size};
      vkCmdCopyBuffer(uploads_, input_staging_[i]->buffer, inputs_[i]->buffer, 1, &region);
    }
    check(vkEndCommandBuffer(uploads_), "vkEndCommandBuffer");
    for (size_t i = 0; i < inputs_.size(); ++i) uploads_from_.push_back(!resident[i]);
  }

  void record_segment(VkCommandBuffer cmd, bool first_segment, size_t first, size_t last) const {
    check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    auto barrier = [&](VkPipelineStageFlags from, VkAccessFlags src, VkPipelineStageFlags to, VkAccessFlags dst) {
      auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
      mb.srcAccessMask = src;
      mb.dstAccessMask = dst;
      vkCmdPipelineBarrier(cmd, from, to, 0, 1, &mb, 0, nullptr, 0, nullptr);
    };
    // Writes of earlier submissions (programs whose results are inputs here, a host step's
    // result) and of the uploads submitted just before it become visible to this one.
    barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    VkPipelineLayout layout = pipeline_layout(ctx_);
    if (ctx_.descriptors) {
      VkDescriptorSet set = ctx_.descriptors->current(&descriptors_bound_);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
    }
    VkPipeline bound = VK_NULL_HANDLE;
    if (first_segment && queries_) vkCmdResetQueryPool(cmd, queries_, 0, 2 * profiled_);
    for (size_t i = first; i < last; ++i) {
      const Dispatch& d = recording_.dispatches[i];
      bool timed = i < profiled_;
      if (d.barrier_before) {
        barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      }
      if (d.pipeline != bound) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
        bound = d.pipeline;
      }
      uint64_t push[2] = {io_table_->address, device_words_->address + 8 * static_cast<uint64_t>(d.args_word)};
      vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
      if (timed) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, static_cast<uint32_t>(2 * i));
      vkCmdDispatch(cmd, d.groups[0], d.groups[1], d.groups[2]);
      if (timed)
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, static_cast<uint32_t>(2 * i + 1));
    }
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  }

  VulkanLayout layout_;
  Context& ctx_;
  Regrow regrow_;
  bool host_io_ = false;
  std::vector<Buffer> inputs_, input_staging_;
  Buffer arena_, status_, io_table_, io_staging_;
  // Remade when the recording changes (under mu_).
  mutable Buffer device_words_, consts_;
  mutable Recording recording_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  mutable std::vector<VkCommandBuffer> cmds_;  // one per segment between host steps
  mutable VkCommandBuffer uploads_ = VK_NULL_HANDLE;  // record_uploads
  mutable std::vector<bool> uploads_from_;            // the inputs it copies
  VkFence fence_ = VK_NULL_HANDLE;
  uint64_t closer_ = 0;
  mutable bool ready_ = false;              // the command buffer matches the recording
  mutable bool profile_ = profiling();      // the setting the command buffer was recorded with
  mutable uint64_t descriptors_bound_ = 0;  // the generation of block descriptors it binds
  mutable VkQueryPool queries_ = VK_NULL_HANDLE;
  mutable uint32_t profiled_ = 0;  // dispatches with timestamps
  mutable std::mutex mu_;
};

VulkanProgram::VulkanProgram(Context& ctx, VulkanLayout layout, Recording recording, Regrow regrow)
    : state_(std::make_unique<State>(ctx, std::move(layout), std::move(recording), std::move(regrow))) {}
VulkanProgram::~VulkanProgram() = default;
std::vector<Array> VulkanProgram::run(const std::vector<Array>& inputs) const { return state_->run(inputs); }
void VulkanProgram::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
  state_->run_into(inputs, outputs);
}
Recording VulkanProgram::recording() const { return state_->recording(); }
const VulkanLayout& VulkanProgram::layout() const { return state_->layout(); }

}  // namespace fluxion::vulkan
