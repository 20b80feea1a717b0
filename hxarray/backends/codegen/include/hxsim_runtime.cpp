// The simulator runtime: fibers for CUDA threads, blocks on a pool of OS threads, barriers, warp
// collectives, fault and watchdog handling. Built once per machine by hxarray (cached), loaded with
// RTLD_GLOBAL so that kernel modules resolve the hxsim_* functions against it.
//
// Execution model: a launch is split into blocks; each pool worker takes blocks one at a time and
// runs all threads of a block as fibers on its own stack pool. A fiber runs until it reaches a
// barrier or a warp collective (or exits), then switches back to the worker's scheduler, which
// resumes the next runnable fiber. Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) inside a kernel and the
// watchdog's abort signal leave the block with siglongjmp; the launch then reports an error.
// Loop mode: where a kernel's module has no barrier, warp collective or shared memory (the driver
// reads that from the module's symbols), no thread ever waits for another, and fibers would run
// each thread to its end in turn anyway; one fiber then runs the block's threads as a plain loop
// in the module (the kernel's thunk; same stack size, faults and watchdog; no switch and no call
// through the runtime per thread).
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hxsim_abi.h"

#if !defined(__x86_64__) || defined(HXSIM_USE_UCONTEXT)
#include <ucontext.h>
#define HXSIM_UCONTEXT 1
#endif

namespace {

enum FiberState { RUNNABLE, AT_BARRIER, AT_WARP, EXITED };

struct Fiber {
    hxsim_thread t;
    int state;
    int bar_kind, bar_pred, bar_result;
    int bar_line;
    unsigned long long warp_result;
#ifdef HXSIM_UCONTEXT
    ucontext_t ctx;
#else
    void* sp;
#endif
    char* stack_lo;  // lowest usable byte; the guard page is below it
};

struct WarpGroup {  // lanes of one warp waiting in one collective
    unsigned base;  // linear index of the warp's lane 0
    unsigned mask, arrived;
    int op, width;
    unsigned long long values[HXSIM_WARP];
    int args[HXSIM_WARP];
};

struct Launch {
    const hxsim_kernel_info* kernel;
    void** args;
    dim3 grid, block;
    unsigned long long nblocks;
    unsigned nthreads;
    int strict;
    int loop;  // loop mode: one fiber calls the kernel for each thread in turn
    std::atomic<unsigned long long> next{0};
    std::atomic<bool> abort{false};
    int active = 0;  // workers inside this launch (under g_mutex)
    bool done = false;
    std::mutex m;
    std::condition_variable cv;
    std::string error;  // first error wins (under m)
    unsigned long long fault_address = 0;
    int has_fault = 0;

    void fail(const std::string& message, unsigned long long address = 0, int fault = 0) {
        std::lock_guard<std::mutex> lock(m);
        if (error.empty()) {
            error = message;
            fault_address = address;
            has_fault = fault;
        }
        abort.store(true);
    }
};

struct Worker {
    pthread_t thread;
    sigjmp_buf jb;
    volatile int in_kernel = 0;
    Launch* volatile launch = nullptr;
    Fiber* volatile current = nullptr;
    std::vector<Fiber> fibers;
    std::vector<WarpGroup> groups;  // pending warp groups (few at a time)
    char* stacks = nullptr;
    size_t stack_count = 0;
    unsigned long long block_linear = 0;
    std::string fail_message;  // set by a fiber that fails, read by the scheduler
    int failed = 0;
#ifdef HXSIM_UCONTEXT
    ucontext_t sched;
#else
    void* sched_sp = nullptr;
#endif
};

size_t g_stack_size = 16384;
size_t g_page = 4096;
// Never destroyed: pool threads wait on these until the process ends (destroying a condition
// variable with waiters blocks in glibc).
std::mutex& g_mutex = *new std::mutex;
std::condition_variable& g_cv = *new std::condition_variable;
std::deque<Launch*>& g_launches = *new std::deque<Launch*>;
std::vector<Worker*>& g_workers = *new std::vector<Worker*>;
bool g_started = false;
pid_t g_pid = 0;  // the pool's threads exist only in the process that started them
int g_abort_signal = 0;
struct sigaction g_previous[65];
__thread Worker* tls_worker __attribute__((tls_model("initial-exec"))) = nullptr;

std::string format(const char* fmt, ...) {
    char buffer[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buffer, sizeof buffer, fmt, ap);
    va_end(ap);
    return buffer;
}

std::string where(const Launch* L, unsigned long long block, const hxsim_thread* t) {
    unsigned long long gx = L->grid.x, gy = L->grid.y;
    std::string s = format("kernel '%s' block (%llu, %llu, %llu)", L->kernel->name, block % gx,
                           (block / gx) % gy, block / (gx * gy));
    if (t) s += format(" thread (%u, %u, %u)", t->thread_idx.x, t->thread_idx.y, t->thread_idx.z);
    return s;
}

// ---- context switching --------------------------------------------------------------------------
#ifndef HXSIM_UCONTEXT
extern "C" void hxsim_switch(void** save_sp, void* to_sp);
extern "C" void hxsim_fiber_trampoline();
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save_sp,
// and resumes the context whose stack pointer is to_sp (System V x86-64).
asm(R"(
    .text
    .globl hxsim_switch
    .hidden hxsim_switch
    .type hxsim_switch, @function
hxsim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size hxsim_switch, .-hxsim_switch

    .globl hxsim_fiber_trampoline
    .hidden hxsim_fiber_trampoline
    .type hxsim_fiber_trampoline, @function
hxsim_fiber_trampoline:
    andq $-16, %rsp
    movq %r12, %rdi
    call hxsim_fiber_main
    ud2
    .size hxsim_fiber_trampoline, .-hxsim_fiber_trampoline
)");
#endif

extern "C" void hxsim_fiber_main(Fiber* f) __attribute__((used, visibility("hidden")));

inline void to_scheduler(Worker* w, Fiber* f) {
#ifdef HXSIM_UCONTEXT
    swapcontext(&f->ctx, &w->sched);
#else
    hxsim_switch(&f->sp, w->sched_sp);
#endif
}

inline void to_fiber(Worker* w, Fiber* f) {
    w->current = f;
#ifdef HXSIM_UCONTEXT
    swapcontext(&w->sched, &f->ctx);
#else
    hxsim_switch(&w->sched_sp, f->sp);
#endif
    w->current = nullptr;
}

#ifdef HXSIM_UCONTEXT
void fiber_entry_uc(unsigned hi, unsigned lo) {
    hxsim_fiber_main(reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
#endif

void prepare(Fiber* f) {
#ifdef HXSIM_UCONTEXT
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack_lo;
    f->ctx.uc_stack.ss_size = g_stack_size;
    f->ctx.uc_link = nullptr;
    uintptr_t p = reinterpret_cast<uintptr_t>(f);
    makecontext(&f->ctx, reinterpret_cast<void (*)()>(fiber_entry_uc), 2,
                static_cast<unsigned>(p >> 32), static_cast<unsigned>(p));
#else
    uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack_lo) + g_stack_size) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 64);
    sp[0] = sp[1] = sp[2] = nullptr;            // r15 r14 r13
    sp[3] = f;                                  // r12: the fiber, for the trampoline
    sp[4] = sp[5] = nullptr;                    // rbx rbp
    sp[6] = reinterpret_cast<void*>(hxsim_fiber_trampoline);  // ret
    sp[7] = nullptr;
    f->sp = sp;
#endif
}

// ---- blocks ---------------------------------------------------------------------------------------
void ensure_stacks(Worker* w, size_t n) {
    if (w->stack_count >= n) return;
    size_t slot = g_stack_size + g_page;
    if (w->stacks) munmap(w->stacks, w->stack_count * slot);
    size_t count = n < 1024 ? 1024 : n;
    void* mem = mmap(nullptr, count * slot, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        w->stacks = nullptr;
        w->stack_count = 0;
        return;
    }
    w->stacks = static_cast<char*>(mem);
    for (size_t i = 0; i < count; i++) mprotect(w->stacks + i * slot, g_page, PROT_NONE);
    w->stack_count = count;
    w->fibers.resize(count);
    for (size_t i = 0; i < count; i++) w->fibers[i].stack_lo = w->stacks + i * slot + g_page;
}

std::string lanes(unsigned mask) {
    std::string s;
    for (int i = 0; i < 32; i++)
        if (mask & (1u << i)) s += (s.empty() ? "" : ",") + std::to_string(i);
    return s.empty() ? "none" : s;
}

// Runs every thread of block `b`; returns an error message or "".
std::string run_block(Launch* L, Worker* w, unsigned long long b) {
    const unsigned n = L->loop ? 1 : L->nthreads;
    ensure_stacks(w, n);
    if (w->stack_count < n) return "cannot allocate fiber stacks for " + std::to_string(n) + " threads";
    const unsigned gx = L->grid.x, gy = L->grid.y;
    const uint3 bidx{unsigned(b % gx), unsigned((b / gx) % gy), unsigned(b / (1ull * gx * gy))};
    const unsigned bx = L->block.x, by = L->block.y;
    w->block_linear = b;
    w->groups.clear();
    w->failed = 0;
    for (unsigned i = 0; i < n; i++) {
        Fiber* f = &w->fibers[i];
        f->t.thread_idx = uint3{i % bx, (i / bx) % by, i / (bx * by)};
        f->t.block_idx = bidx;
        f->t.block_dim = L->block;
        f->t.grid_dim = L->grid;
        f->t.lane = i % HXSIM_WARP;
        f->t.linear = i;
        f->state = RUNNABLE;
        prepare(f);
    }
    unsigned live = n;
    for (;;) {
        for (unsigned i = 0; i < n; i++) {
            Fiber* f = &w->fibers[i];
            if (f->state == RUNNABLE) {
                to_fiber(w, f);
                if (w->failed) return where(L, b, &f->t) + ": " + w->fail_message;
                if (f->state == EXITED) live--;
            }
        }
        if (L->abort.load(std::memory_order_relaxed)) return "";  // another block failed
        if (live == 0) return "";
        unsigned at_barrier = 0, runnable = 0;
        for (unsigned i = 0; i < n; i++) {
            at_barrier += w->fibers[i].state == AT_BARRIER;
            runnable += w->fibers[i].state == RUNNABLE;
        }
        if (runnable) continue;  // a warp collective completed during the pass
        if (at_barrier == live) {  // every live thread reached a barrier: release it
            Fiber* first = nullptr;
            int count = 0;
            for (unsigned i = 0; i < n; i++) {
                Fiber* f = &w->fibers[i];
                if (f->state != AT_BARRIER) continue;
                if (!first) first = f;
                if (f->bar_line != first->bar_line || f->bar_kind != first->bar_kind)
                    return where(L, b, &f->t) + format(
                        ": waits at the __syncthreads() of line %d while thread (%u, %u, %u) "
                        "waits at the one of line %d: a barrier inside divergent code",
                        f->bar_line, first->t.thread_idx.x, first->t.thread_idx.y,
                        first->t.thread_idx.z, first->bar_line);
                count += f->bar_pred != 0;
            }
            if (L->strict && live < n) {
                for (unsigned i = 0; i < n; i++)
                    if (w->fibers[i].state == EXITED)
                        return where(L, b, &w->fibers[i].t) +
                               ": returned before a __syncthreads() that other threads of its "
                               "block reached (check mode reports this; on Volta and later "
                               "GPUs exited threads count as arrived)";
            }
            int result = first->bar_kind == HXSIM_BAR_COUNT ? count
                         : first->bar_kind == HXSIM_BAR_AND ? count == int(live)
                         : first->bar_kind == HXSIM_BAR_OR  ? count > 0 : 0;
            for (unsigned i = 0; i < n; i++) {
                Fiber* f = &w->fibers[i];
                if (f->state == AT_BARRIER) {
                    f->bar_result = result;
                    f->state = RUNNABLE;
                }
            }
            continue;
        }
        // Nothing can run: describe the first warp collective that waits forever.
        for (const WarpGroup& g : w->groups) {
            unsigned missing = g.mask & ~g.arrived;
            const unsigned warp_base = g.base;
            for (unsigned i = warp_base; i < warp_base + 32 && i < n; i++)
                if (w->fibers[i].state == AT_WARP && (g.arrived >> w->fibers[i].t.lane & 1)) {
                    Fiber* f = &w->fibers[i];
                    std::string why;
                    for (int lane = 0; lane < 32; lane++) {
                        if (!(missing >> lane & 1)) continue;
                        unsigned j = warp_base + lane;
                        const char* state = j >= n ? "does not exist (beyond blockDim)"
                                            : w->fibers[j].state == EXITED ? "has exited"
                                            : w->fibers[j].state == AT_BARRIER
                                                ? "waits at __syncthreads()"
                                                : "waits in another warp collective";
                        why = format("lane %d %s", lane, state);
                        break;
                    }
                    return where(L, b, &f->t) + format(
                        ": warp collective with mask 0x%08x waits for lanes {%s} that never "
                        "arrive (%s): inconsistent mask or divergent code",
                        g.mask, lanes(missing).c_str(), why.c_str());
                }
        }
        for (unsigned i = 0; i < n; i++)
            if (w->fibers[i].state == AT_BARRIER)
                return where(L, b, &w->fibers[i].t) + format(
                       ": waits at the __syncthreads() of line %d that the rest of its block "
                       "never reaches", w->fibers[i].bar_line);
        return where(L, b, nullptr) + ": deadlock";
    }
}

[[noreturn]] void fiber_fail(Worker* w, Fiber* f, const std::string& message) {
    w->fail_message = message;
    w->failed = 1;
    to_scheduler(w, f);
    __builtin_unreachable();
}

bool has_work(const Launch* L) {
    return !L->abort.load() && L->next.load() < L->nblocks;
}

void worker_main(Worker* w) {
    tls_worker = w;
    sigset_t all;
    sigfillset(&all);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, g_abort_signal}) sigdelset(&all, s);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
    stack_t alt;
    alt.ss_size = 65536;
    alt.ss_sp = malloc(alt.ss_size);
    alt.ss_flags = 0;
    sigaltstack(&alt, nullptr);
    for (;;) {
        Launch* L = nullptr;
        {
            std::unique_lock<std::mutex> lock(g_mutex);
            g_cv.wait(lock, [&] {
                for (Launch* c : g_launches)
                    if (has_work(c)) { L = c; return true; }
                return false;
            });
            L->active++;
        }
        w->launch = L;
        for (;;) {
            unsigned long long b = L->next.fetch_add(1);
            if (b >= L->nblocks || L->abort.load()) break;
            if (sigsetjmp(w->jb, 1) == 0) {
                w->in_kernel = 1;
                std::string error = run_block(L, w, b);
                w->in_kernel = 0;
                if (!error.empty()) L->fail(error);
            } else {
                w->in_kernel = 0;  // left the block through a signal; the handler recorded why
                w->current = nullptr;
            }
        }
        w->launch = nullptr;
        std::lock_guard<std::mutex> lock(g_mutex);
        if (--L->active == 0 && !has_work(L)) {
            std::lock_guard<std::mutex> launch_lock(L->m);
            L->done = true;
            L->cv.notify_all();
        }
    }
}

const char* signal_name(int sig) {
    switch (sig) {
        case SIGSEGV: return "invalid memory access (SIGSEGV)";
        case SIGBUS: return "misaligned or invalid memory access (SIGBUS)";
        case SIGFPE: return "arithmetic exception (SIGFPE: integer division by zero or overflow)";
        case SIGILL: return "illegal instruction (SIGILL, e.g. __trap())";
        default: return "signal";
    }
}

void on_signal(int sig, siginfo_t* info, void* context) {
    Worker* w = tls_worker;
    if (w && w->in_kernel && w->launch) {
        Launch* L = w->launch;
        if (sig == g_abort_signal) {
            // Only out of kernel code (a fiber runs): the scheduler itself, which may be inside
            // malloc, sees the abort flag after its pass. The watchdog repeats the signal.
            if (L->abort.load() && w->current) siglongjmp(w->jb, 2);
            return;
        }
        Fiber* f = w->current;
        unsigned long long address = reinterpret_cast<uintptr_t>(info->si_addr);
        std::string message = where(L, w->block_linear, f ? &f->t : nullptr) + ": ";
        int is_fault = sig == SIGSEGV || sig == SIGBUS;
        if (f && sig == SIGSEGV && address + g_page >= reinterpret_cast<uintptr_t>(f->stack_lo) &&
            address < reinterpret_cast<uintptr_t>(f->stack_lo))
        {
            message += format("stack overflow (the fiber stack is %zu bytes; raise "
                              "HXARRAY_CUDA_SIM_STACK)", g_stack_size);
            is_fault = 0;
        }
        else
            message += format("%s at address 0x%llx", signal_name(sig), address);
        // fail() takes a mutex: safe because a kernel never holds L->m
        L->fail(message, address, is_fault);
        siglongjmp(w->jb, 1);
    }
    if (sig == g_abort_signal) return;
    // Not ours: hand the signal to whoever had it before (Python's faulthandler, the default).
    struct sigaction* prev = &g_previous[sig];
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction) prev->sa_sigaction(sig, info, context);
        return;
    }
    if (prev->sa_handler == SIG_IGN) return;
    if (prev->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    prev->sa_handler(sig);
}

void install_handlers() {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, g_abort_signal}) {
        struct sigaction current;
        sigaction(sig, nullptr, &current);
        if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_signal) continue;
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_signal;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&ours.sa_mask);
        sigaction(sig, &ours, &g_previous[sig]);
    }
}

}  // namespace

// ---- calls from kernel code -----------------------------------------------------------------------
extern "C" void hxsim_fiber_main(Fiber* f) {
    Worker* w = tls_worker;
    Launch* L = w->launch;
    L->kernel->invoke(L->args, &f->t, L->loop ? L->nthreads : 1);  // a loop starts at thread 0
    f->state = EXITED;
    to_scheduler(w, f);
    __builtin_unreachable();
}

extern "C" const hxsim_thread* hxsim_self(void) { return &tls_worker->current->t; }

extern "C" int hxsim_barrier(int kind, int predicate, int line) {
    Worker* w = tls_worker;
    Fiber* f = w->current;
    f->bar_kind = kind;
    f->bar_pred = predicate;
    f->bar_line = line;
    f->state = AT_BARRIER;
    to_scheduler(w, f);
    return f->bar_result;
}

extern "C" unsigned int hxsim_activemask(void) {
    Worker* w = tls_worker;
    Fiber* f = w->current;
    unsigned base = f->t.linear - f->t.lane, mask = 0;
    for (unsigned lane = 0; lane < 32 && base + lane < w->launch->nthreads; lane++)
        if (w->fibers[base + lane].state != EXITED) mask |= 1u << lane;
    return mask;
}

extern "C" void hxsim_trap(const char* message) {
    Worker* w = tls_worker;
    fiber_fail(w, w->current, message);
}

extern "C" void hxsim_assert_fail(const char* expr, const char* file, unsigned line) {
    Worker* w = tls_worker;
    fiber_fail(w, w->current, format("assertion '%s' failed (%s:%u)", expr, file, line));
}

namespace {
unsigned long long warp_result(const WarpGroup& g, unsigned lane) {
    const int width = g.width;
    unsigned seg = lane & ~unsigned(width - 1);
    unsigned src = lane;
    unsigned long long acc = 0;
    switch (g.op) {
        case HXSIM_SYNCWARP: return 0;
        case HXSIM_SHFL: src = seg + (unsigned(g.args[lane]) & unsigned(width - 1)); break;
        case HXSIM_SHFL_UP:
            if ((lane & unsigned(width - 1)) >= unsigned(g.args[lane])) src = lane - g.args[lane];
            break;
        case HXSIM_SHFL_DOWN:
            if ((lane & unsigned(width - 1)) + unsigned(g.args[lane]) < unsigned(width))
                src = lane + g.args[lane];
            break;
        case HXSIM_SHFL_XOR:
            src = lane ^ unsigned(g.args[lane]);
            if (src >= 32 || (src & ~unsigned(width - 1)) != seg) src = lane;
            break;
        case HXSIM_BALLOT: case HXSIM_ANY: case HXSIM_ALL:
            for (int i = 0; i < 32; i++)
                if ((g.mask >> i & 1) && g.values[i]) acc |= 1ull << i;
            if (g.op == HXSIM_BALLOT) return acc;
            if (g.op == HXSIM_ANY) return acc != 0;
            return acc == g.mask;
        case HXSIM_MATCH_ANY:
            for (int i = 0; i < 32; i++)
                if ((g.mask >> i & 1) && g.values[i] == g.values[lane]) acc |= 1ull << i;
            return acc;
        default: {  // reductions over 32-bit values
            bool first = true;
            for (int i = 0; i < 32; i++) {
                if (!(g.mask >> i & 1)) continue;
                unsigned v = unsigned(g.values[i]);
                unsigned a = unsigned(acc);
                if (first) { a = v; first = false; }
                else switch (g.op) {
                    case HXSIM_REDUCE_ADD: a += v; break;
                    case HXSIM_REDUCE_MIN: a = v < a ? v : a; break;
                    case HXSIM_REDUCE_MAX: a = v > a ? v : a; break;
                    case HXSIM_REDUCE_MIN_SIGNED: a = int(v) < int(a) ? v : a; break;
                    case HXSIM_REDUCE_MAX_SIGNED: a = int(v) > int(a) ? v : a; break;
                    case HXSIM_REDUCE_AND: a &= v; break;
                    case HXSIM_REDUCE_OR: a |= v; break;
                    case HXSIM_REDUCE_XOR: a ^= v; break;
                }
                acc = a;
            }
            return acc;
        }
    }
    if (!(g.mask >> src & 1)) src = lane;  // reading an inactive lane: its own value
    return g.values[src];
}
}  // namespace

extern "C" unsigned long long hxsim_warp_op(int op, unsigned int mask, unsigned long long value,
                                            int arg, int width) {
    Worker* w = tls_worker;
    Fiber* f = w->current;
    const unsigned lane = f->t.lane;
    if (!(mask >> lane & 1))
        fiber_fail(w, f, format("calls a warp collective with mask 0x%08x that does not include "
                                "its own lane %u", mask, lane));
    if (width <= 0 || width > 32 || (width & (width - 1)))
        fiber_fail(w, f, format("warp collective width %d is not a power of two in 1..32", width));
    const unsigned warp_base = f->t.linear - lane;
    WarpGroup* g = nullptr;
    for (WarpGroup& c : w->groups) {
        if (c.base != warp_base) continue;
        if (c.mask == mask) {
            if (c.op != op)
                fiber_fail(w, f, format("lanes of mask 0x%08x are in different warp collectives "
                                        "(operation %d against %d)", mask, op, c.op));
            g = &c;
            break;
        }
        if (c.mask & mask)
            fiber_fail(w, f, format("warp collective with mask 0x%08x while lanes {%s} wait in "
                                    "one with mask 0x%08x: inconsistent masks", mask,
                                    lanes(c.arrived).c_str(), c.mask));
    }
    if (!g) {
        w->groups.push_back(WarpGroup{});
        g = &w->groups.back();
        g->base = warp_base;
        g->mask = mask;
        g->arrived = 0;
        g->op = op;
        g->width = width;
    }
    g->values[lane] = value;
    g->args[lane] = arg;
    g->arrived |= 1u << lane;
    if (g->arrived == mask) {  // the last lane computes every lane's result
        for (unsigned l = 0; l < 32; l++) {
            if (!(mask >> l & 1)) continue;
            Fiber* other = &w->fibers[warp_base + l];
            other->warp_result = warp_result(*g, l);
            if (other != f) other->state = RUNNABLE;
        }
        *g = w->groups.back();
        w->groups.pop_back();
        return f->warp_result;
    }
    // A mask naming lanes past the end of the block can never complete.
    for (unsigned l = 0; l < 32; l++)
        if ((mask >> l & 1) && warp_base + l >= w->launch->nthreads)
            fiber_fail(w, f, format("warp collective mask 0x%08x names lane %u, which does not "
                                    "exist (blockDim has %u threads)", mask, l,
                                    w->launch->nthreads));
    f->state = AT_WARP;
    to_scheduler(w, f);
    return f->warp_result;
}

// ---- calls from Python (ctypes) -------------------------------------------------------------------
extern "C" int hxsim_abi_version(void) { return HXSIM_ABI_VERSION; }

extern "C" int hxsim_start(int workers, size_t stack_size) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_started) return int(g_workers.size());
    g_page = size_t(sysconf(_SC_PAGESIZE));
    g_stack_size = (stack_size + g_page - 1) / g_page * g_page;
    g_abort_signal = SIGRTMIN + 6;
    g_pid = getpid();
    install_handlers();
    for (int i = 0; i < workers; i++) {
        Worker* w = new Worker();
        g_workers.push_back(w);
        std::thread t(worker_main, w);
        w->thread = t.native_handle();
        t.detach();
    }
    g_started = true;
    return workers;
}

extern "C" void* hxsim_alloc(size_t nbytes, int guarded) {
    if (!guarded) {
        void* p = nullptr;
        if (posix_memalign(&p, 256, nbytes ? nbytes : 1) != 0) return nullptr;
        return p;
    }
    // Check mode: a guard page on each side; the allocation ends at the upper guard, 16-aligned.
    size_t body = (nbytes + 15) / 16 * 16;
    size_t pages = (body + g_page - 1) / g_page;
    size_t total = (pages + 2) * g_page;
    char* base = static_cast<char*>(mmap(nullptr, total, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base == MAP_FAILED) return nullptr;
    mprotect(base, g_page, PROT_NONE);
    mprotect(base + (pages + 1) * g_page, g_page, PROT_NONE);
    return base + (pages + 1) * g_page - body;
}

extern "C" void hxsim_dealloc(void* p, size_t nbytes, int guarded) {
    if (!guarded) {
        free(p);
        return;
    }
    size_t body = (nbytes + 15) / 16 * 16;
    size_t pages = (body + g_page - 1) / g_page;
    char* base = static_cast<char*>(p) + body - (pages + 1) * g_page;
    munmap(base, (pages + 2) * g_page);
}

// Runs a launch to completion on the pool. Returns 0, or 1 with a message in `error` (and the
// faulting address in *fault_address when *is_fault is set). Blocks the calling thread.
extern "C" int hxsim_launch(const hxsim_kernel_info* kernel, void** args, const unsigned* grid,
                            const unsigned* block, int strict, int loop, double timeout_s,
                            char* error,
                            size_t error_size, unsigned long long* fault_address, int* is_fault) {
    if (getpid() != g_pid) {
        snprintf(error, error_size, "the CUDA simulator cannot run kernels in a process forked "
                 "after it started (its worker threads stay in the parent, as a CUDA context "
                 "does); use the 'spawn' start method");
        return 2;
    }
    install_handlers();  // again: something (faulthandler) may have replaced ours since
    Launch* L = new Launch();
    L->kernel = kernel;
    L->args = args;
    L->grid = dim3(grid[0], grid[1], grid[2]);
    L->block = dim3(block[0], block[1], block[2]);
    L->nblocks = 1ull * grid[0] * grid[1] * grid[2];
    L->nthreads = block[0] * block[1] * block[2];
    L->strict = strict;
    L->loop = loop;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_launches.push_back(L);
    }
    if (L->nblocks == 1)
        g_cv.notify_one();  // one block: waking every worker only costs time
    else
        g_cv.notify_all();
    bool finished;
    {
        std::unique_lock<std::mutex> lock(L->m);
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
        finished = L->cv.wait_until(lock, deadline, [&] { return L->done; });
    }
    if (!finished) {
        L->fail(format("kernel '%s' ran longer than the watchdog's %.3g s limit and was stopped "
                       "(HXARRAY_CUDA_SIM_WATCHDOG sets the limit; a spin-wait on another block "
                       "can never finish when blocks run in turn)", kernel->name, timeout_s));
        for (int attempt = 0; attempt < 100 && !finished; attempt++) {
            {
                std::lock_guard<std::mutex> lock(g_mutex);
                for (Worker* w : g_workers)
                    if (w->launch == L) pthread_kill(w->thread, g_abort_signal);
            }
            std::unique_lock<std::mutex> lock(L->m);
            finished = L->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return L->done; });
        }
    }
    int status = 0;
    {
        std::lock_guard<std::mutex> lock(L->m);
        if (!L->error.empty()) {
            snprintf(error, error_size, "%s", L->error.c_str());
            *fault_address = L->fault_address;
            *is_fault = L->has_fault;
            status = 1;
        }
    }
    if (!finished) {  // a worker ignores the abort signal: never free L under it
        snprintf(error, error_size, "%s (and a worker did not stop: the simulator is unusable)",
                 L->error.c_str());
        return 2;
    }
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        for (auto it = g_launches.begin(); it != g_launches.end(); ++it)
            if (*it == L) { g_launches.erase(it); break; }
    }
    delete L;
    return status;
}
