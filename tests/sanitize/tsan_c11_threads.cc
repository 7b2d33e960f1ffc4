// C11 threads for ThreadSanitizer runs (scripts/sanitize thread LD_PRELOADs this).
//
// librdkafka starts its threads with C11 thrd_create and locks with C11 mtx_*/cnd_*. Since glibc
// 2.34 these live in libc and call the pthread functions internally, past TSan's interceptors
// (GCC 12's libtsan has none for C11 threads; LLVM added some later). TSan then never sets the
// threads up, and their first allocation crashes (SIGSEGV in
// SizeClassAllocator64LocalCache::Allocate, from rdk:broker threads); and it cannot see
// librdkafka's locking, so it reports races between a message's producer and its delivery
// callback that the lock orders. These definitions come first in symbol lookup and go through
// the public pthread functions, which TSan intercepts. glibc's mtx_t and cnd_t hold a
// pthread_mutex_t and pthread_cond_t (same size and layout), which is what glibc's own C11
// functions pass to the pthread ones.
#include <errno.h>
#include <pthread.h>
#include <threads.h>

#include <cstdint>
#include <cstdlib>

namespace {

struct Start {
  thrd_start_t fn;
  void* arg;
};

void* Trampoline(void* p) {
  Start s = *static_cast<Start*>(p);
  std::free(p);
  return reinterpret_cast<void*>(static_cast<intptr_t>(s.fn(s.arg)));
}

}  // namespace

extern "C" int thrd_create(thrd_t* thr, thrd_start_t fn, void* arg) {
  auto* s = static_cast<Start*>(std::malloc(sizeof(Start)));
  if (s == nullptr) return thrd_nomem;
  *s = Start{fn, arg};
  const int rc = pthread_create(thr, nullptr, Trampoline, s);
  if (rc != 0) {
    std::free(s);
    return thrd_error;
  }
  return thrd_success;
}

extern "C" int thrd_join(thrd_t thr, int* res) {
  void* ret = nullptr;
  if (pthread_join(thr, &ret) != 0) return thrd_error;
  if (res != nullptr) *res = static_cast<int>(reinterpret_cast<intptr_t>(ret));
  return thrd_success;
}

extern "C" int mtx_init(mtx_t* m, int type) {
  static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t));
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if ((type & mtx_recursive) != 0) pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  const int rc = pthread_mutex_init(reinterpret_cast<pthread_mutex_t*>(m), &attr);
  pthread_mutexattr_destroy(&attr);
  return rc == 0 ? thrd_success : thrd_error;
}

extern "C" int mtx_lock(mtx_t* m) {
  return pthread_mutex_lock(reinterpret_cast<pthread_mutex_t*>(m)) == 0 ? thrd_success : thrd_error;
}

extern "C" int mtx_trylock(mtx_t* m) {
  const int rc = pthread_mutex_trylock(reinterpret_cast<pthread_mutex_t*>(m));
  return rc == 0 ? thrd_success : rc == EBUSY ? thrd_busy : thrd_error;
}

extern "C" int mtx_timedlock(mtx_t* __restrict m, const struct timespec* __restrict ts) {
  const int rc = pthread_mutex_timedlock(reinterpret_cast<pthread_mutex_t*>(m), ts);
  return rc == 0 ? thrd_success : rc == ETIMEDOUT ? thrd_timedout : thrd_error;
}

extern "C" int mtx_unlock(mtx_t* m) {
  return pthread_mutex_unlock(reinterpret_cast<pthread_mutex_t*>(m)) == 0 ? thrd_success : thrd_error;
}

extern "C" void mtx_destroy(mtx_t* m) { pthread_mutex_destroy(reinterpret_cast<pthread_mutex_t*>(m)); }

extern "C" int cnd_init(cnd_t* c) {
  static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t));
  return pthread_cond_init(reinterpret_cast<pthread_cond_t*>(c), nullptr) == 0 ? thrd_success : thrd_error;
}

extern "C" int cnd_signal(cnd_t* c) {
  return pthread_cond_signal(reinterpret_cast<pthread_cond_t*>(c)) == 0 ? thrd_success : thrd_error;
}

extern "C" int cnd_broadcast(cnd_t* c) {
  return pthread_cond_broadcast(reinterpret_cast<pthread_cond_t*>(c)) == 0 ? thrd_success : thrd_error;
}

extern "C" int cnd_wait(cnd_t* c, mtx_t* m) {
  return pthread_cond_wait(reinterpret_cast<pthread_cond_t*>(c), reinterpret_cast<pthread_mutex_t*>(m)) == 0
             ? thrd_success
             : thrd_error;
}

extern "C" int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m, const struct timespec* __restrict ts) {
  const int rc =
      pthread_cond_timedwait(reinterpret_cast<pthread_cond_t*>(c), reinterpret_cast<pthread_mutex_t*>(m), ts);
  return rc == 0 ? thrd_success : rc == ETIMEDOUT ? thrd_timedout : thrd_error;
}

extern "C" void cnd_destroy(cnd_t* c) { pthread_cond_destroy(reinterpret_cast<pthread_cond_t*>(c)); }

extern "C" int thrd_detach(thrd_t thr) { return pthread_detach(thr) == 0 ? thrd_success : thrd_error; }
