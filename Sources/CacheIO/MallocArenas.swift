import CSupport

/// glibc's malloc arenas, for the server binary: its loop thread does nearly
/// all allocation, and every arena a thread touches costs resident memory.
package enum MallocArenas {
    /// Caps the arenas (see `cs_limit_malloc_arenas`). Only the `httpcache`
    /// server calls it: a host embedding the library keeps its own settings.
    @discardableResult
    package static func limit(to count: Int) -> Bool {
        cs_limit_malloc_arenas(Int32(count)) == 1
    }

    /// Returns the heap's free pages to the system (see `cs_trim_heap`).
    @discardableResult
    package static func trimFreeMemory() -> Bool {
        cs_trim_heap() == 1
    }
}
