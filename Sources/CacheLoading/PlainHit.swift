import Glibc
import CacheIO
import CacheStorage

/// A stored response as its owner loop would serve a plain request for it
/// during one second of the store's clock: its head (with that second's Age) and its
/// complete data file. Another loop may answer such requests with it while
/// both the second and the store's epoch are unchanged; anything else goes
/// to the owner. The data file is never rewritten in place (a new version
/// gets a new file), so the bytes always match the head. While a copy (or
/// a response sent from it) lives, its resource is leased: never evicted.
package struct PlainHit: Sendable {
    package let info: ContentInfo
    /// `ResponsePlan.middleLines(info)`: every response from the copy shares them.
    package let middle: ResponsePlan.MiddleLines
    package let file: DataFile
    let lease: ResourceLease
    /// The second (the store's clock) the head's Age is right for.
    package let second: Int64
    /// `ResourceStore.epoch` when it was made.
    package let epoch: Int
    /// The ttl under the forward and reverse modes' freshness policy; nil
    /// when that policy would not serve it as it stands (their requests
    /// then go to the owner loop).
    package let transparentTTL: Int?
    /// The whole body in memory (a small object, see `PlainHitCache`):
    /// never set for an encrypted file (its bytes on disk are ciphertext).
    package let body: [UInt8]?

    /// This copy with its body read into memory; nil when the file is
    /// encrypted or larger than `limit`, or the read fails or comes up short.
    package func withBody(limit: Int) -> PlainHit? {
        guard !file.isEncrypted, let total = info.totalLength, total > 0, total <= Int64(limit) else { return nil }
        var read = 0
        // Uninitialized: zeroing 32 KiB first cost as much as the read.
        let bytes = [UInt8](unsafeUninitializedCapacity: Int(total)) { buffer, count in
            while read < buffer.count {
                let n = pread(file.fd, buffer.baseAddress! + read, buffer.count - read, off_t(read))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                read += n
            }
            count = read
        }
        guard read == Int(total) else { return nil }
        return PlainHit(info: info, middle: middle, file: file, lease: lease, second: second, epoch: epoch,
                        transparentTTL: transparentTTL, body: bytes)
    }

    /// Whether it still says what the owner would say now.
    package func isCurrent(second now: Int64, epoch current: Int) -> Bool {
        now == second && current == epoch
    }
}

/// A resource kept from eviction by copies of its hit: taken on the owner
/// loop, given back there when the last copy or response holding it goes,
/// on any thread.
final class ResourceLease: Sendable {
    private let owner: LoopBound<(state: ResourceState, loader: Loader)>

    init(state: ResourceState, loader: Loader) {
        owner = LoopBound((state, loader), loop: loader.store.loop)
    }

    deinit {
        let owner = owner
        let end: @Sendable () -> Void = { owner.value.loader.leaseEnded(owner.value.state) }
        // Refused once the loop stopped: nothing is left to release.
        if owner.loop.inLoop { end() } else { owner.loop.execute(end) }
    }
}
