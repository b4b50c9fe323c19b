import CSupport

/// Only the `httpcache` server (a host embedding the library keeps its own settings): its loop
/// thread does nearly all allocation, and every arena a thread touches costs resident memory.
package enum MallocArenas {
    @discardableResult
    package static func limit(to count: Int) -> Bool { cs_limit_malloc_arenas(Int32(count)) == 1 }

    /// The heap's free pages back to the system.
    @discardableResult
    package static func trimFreeMemory() -> Bool { cs_trim_heap() == 1 }
}
