import CacheStorage

/// A stored response as its owner loop would serve a plain request for it
/// during one wall-clock second: its head (with that second's Age) and its
/// complete data file. Another loop may answer such requests with it while
/// both the second and the store's epoch are unchanged; anything else goes
/// to the owner. The data file is never rewritten in place (a new version
/// gets a new file), so the bytes always match the head.
package struct PlainHit: Sendable {
    package let info: ContentInfo
    package let file: DataFile
    /// Wall-clock second (store clock) the head's Age is right for.
    package let second: Int64
    /// `ResourceStore.epoch` when it was made.
    package let epoch: Int

    /// Whether it still says what the owner would say now.
    package func isCurrent(second now: Int64, epoch current: Int) -> Bool {
        now == second && current == epoch
    }
}
