// One gRPC stream's outgoing messages: gRPC allows a single write in flight, producers may run on
// any thread. `start` runs under the queue's (recursive) lock so that after Break() returns no new
// write can begin; a reaction that gRPC runs inline re-enters safely.
#ifndef TWINSPAN_SERVICES_RPC_WRITE_QUEUE_H_
#define TWINSPAN_SERVICES_RPC_WRITE_QUEUE_H_

#include <deque>
#include <functional>
#include <mutex>
#include <utility>

namespace twinspan::rpc {

// Thread-safe.
template <typename Message>
class WriteQueue {
 public:
  // `start` issues one write of the message (alive until the next OnWriteDone); `finish` ends the
  // writing side once everything queued was written.
  WriteQueue(std::function<void(const Message*)> start, std::function<void()> finish)
      : start_(std::move(start)), finish_(std::move(finish)) {}

  // False when the queue is closed or broken (the message is dropped).
  bool Push(Message message) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (closing_ || broken_) return false;
    queue_.push_back(std::move(message));
    if (!writing_) StartNext();
    return true;
  }

  void OnWriteDone(bool ok) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      broken_ = true;
      queue_.clear();
    }
    if (!queue_.empty() && !broken_) {
      StartNext();
    } else if (closing_ && !finished_) {
      finished_ = true;
      finish_();
    }
  }

  // Finishes after the queued writes (at most once), also when the stream broke.
  void Close() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    if (writing_ || finished_) return;
    finished_ = true;
    finish_();
  }

  // The stream is gone: drop everything, start nothing more.
  void Break() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    broken_ = true;
    queue_.clear();
  }

 private:
  void StartNext() {
    writing_ = true;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    start_(&current_);
  }

  std::function<void(const Message*)> start_;
  std::function<void()> finish_;
  std::recursive_mutex mu_;
  std::deque<Message> queue_;
  Message current_;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  bool broken_ = false;
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_WRITE_QUEUE_H_
