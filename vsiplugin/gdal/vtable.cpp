// vtable.cpp: how much of a vtable can be copied, and the probe that finds
// a slot by calling through a copy (see vtable.h).
#include "gdal/vtable.h"

#include <link.h>

#include <atomic>
#include <utility>

namespace {

using vt__abi::kMaxSlots;

std::atomic<long> g_probe_slot{-1};
std::atomic<int> g_probe_calls{0};

template <size_t I> void probe_thunk(void *, const char *)
{
    g_probe_slot.store(static_cast<long>(I));
    g_probe_calls.fetch_add(1);
}

template <size_t... I>
void fill_probe(void **slots, size_t n, std::index_sequence<I...>)
{
    void *thunks[] = {reinterpret_cast<void *>(&probe_thunk<I>)...};
    for (size_t i = 0; i < n && i < sizeof...(I); i++)
        slots[i] = thunks[i];
}

}  // namespace

namespace vt__abi {

size_t readable_slots(void **vt)
{
    struct Find {
        uintptr_t addr;
        uintptr_t end;
    } f{reinterpret_cast<uintptr_t>(vt), 0};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) -> int {
            Find *p = static_cast<Find *>(data);
            for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) &ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD)
                    continue;
                uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                uintptr_t hi = lo + ph.p_memsz;
                if (p->addr >= lo && p->addr < hi) {
                    p->end = hi;
                    return 1;
                }
            }
            return 0;
        },
        &f);
    if (f.end == 0)
        return 0;
    size_t n = (f.end - f.addr) / sizeof(void *);
    return n < kMaxSlots ? n : kMaxSlots;
}

size_t probe(void **slots, void **orig, size_t nslots, void (*call)())
{
    fill_probe(slots, nslots, std::make_index_sequence<kMaxSlots>());
    std::memcpy(slots, orig, 2 * sizeof(void *));  // destructors stay
    g_probe_slot.store(-1);
    g_probe_calls.store(0);
    call();
    std::memcpy(slots, orig, nslots * sizeof(void *));
    long s = g_probe_slot.load();
    return g_probe_calls.load() == 1 && s >= 2 ? static_cast<size_t>(s)
                                                : SIZE_MAX;
}

}  // namespace vt__abi
