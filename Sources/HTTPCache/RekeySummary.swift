import CacheStorage

/// What `MediaCache.rekey` did (or has done so far, in a progress report).
public struct RekeySummary: Sendable, Equatable {
    /// Cache entries re-encrypted (a resumed rekey does not count the interrupted run's).
    public var entries: Int
    /// Cached bytes re-encrypted.
    public var bytes: Int64
    /// Download records resealed.
    public var downloadRecords: Int
    /// Files removed because no valid metadata named them or neither key opened them.
    public var filesRemoved: Int

    init(_ summary: FolderRekey.Summary) {
        entries = summary.entries
        bytes = summary.bytes
        downloadRecords = summary.records
        filesRemoved = summary.removed
    }
}
