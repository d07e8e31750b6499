// vtable.h: the Itanium C++ ABI as the takeover uses it (vtable.cpp).
//
// Why a file of its own: these are facts of the C++ ABI (GCC and Clang on
// every platform GDAL's plugin loader supports), not of GDAL: which vtable
// slot a virtual member function has, a member function pointer that calls
// given code, how many words of a vtable can be copied, a redirected slot
// checked against the virtual's signature at compile time, and the probe
// that finds the slot a call goes through. takeover_install.cpp (GDAL's
// /vsis3/ handler, takeover.cpp's hooks) and takeover_stream.cpp (its
// /vsis3_streaming/ handler) both copy a handler's vtable with them.
//
// Thread: probe() changes the vtable copy it is given while it runs; it is
// called only from vt__takeover_install, before any /vsis3/ I/O.
#ifndef VT_VTABLE_H
#define VT_VTABLE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cpl_vsi_virtual.h>

namespace vt__abi {

struct PmfRep {
    uintptr_t ptr;
    ptrdiff_t adj;
};

template <typename Pmf> PmfRep rep_of(Pmf f)
{
    static_assert(sizeof(Pmf) == sizeof(PmfRep),
                  "vsitune needs the Itanium C++ ABI (GCC or Clang)");
    PmfRep r;
    std::memcpy(&r, &f, sizeof r);
    return r;
}

// Slot index of a virtual member function; SIZE_MAX if not virtual.
// The ARM variant of the ABI (AArch64 and 32-bit ARM, where a code address
// may have its low bit set) marks a virtual one in adj's low bit instead, ptr
// then holding the slot's byte offset itself: an ABI difference, so #if.
template <typename Pmf> size_t vslot(Pmf f)
{
    PmfRep r = rep_of(f);
#if defined(__aarch64__) || defined(__arm__)
    return (r.adj & 1) ? r.ptr / sizeof(void *) : SIZE_MAX;
#else
    return (r.ptr & 1) ? (r.ptr - 1) / sizeof(void *) : SIZE_MAX;
#endif
}

// A member function pointer that calls the code at addr, non-virtually.
template <typename Pmf> Pmf pmf_at(void *addr)
{
    PmfRep r{reinterpret_cast<uintptr_t>(addr), 0};
    Pmf f;
    std::memcpy(&f, &r, sizeof f);
    return f;
}

const size_t kPrefixWords = 2;  // offset-to-top, type_info
const size_t kMaxSlots = 512;

// How many vtable words can be read from vt on: up to the end of the
// loaded segment that holds it (a vtable never crosses one), at most
// kMaxSlots. Words past the class's real vtable are copied but never used.
size_t readable_slots(void **vt);

// One redirected slot: the hook's code and the slot it replaces. The
// template only compiles when the hook has exactly the virtual's signature.
struct Redirect {
    size_t slot;
    void *code;
};

template <typename H, typename R, typename... A>
Redirect redirect(R (VSIFilesystemHandler::*virt)(A...), R (H::*hook)(A...))
{
    return {vslot(virt), reinterpret_cast<void *>(rep_of(hook).ptr)};
}

// Run call() with every slot (but the destructors) of a vtable copy (slots:
// nslots words, orig: the object's own table, which it is restored from)
// pointing at a recording thunk; the slot it called, or SIZE_MAX unless
// exactly one method was called exactly once.
size_t probe(void **slots, void **orig, size_t nslots, void (*call)());

}  // namespace vt__abi

#endif
