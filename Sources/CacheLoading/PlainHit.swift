import CacheIO
import CacheStorage

/// A stored response as its owner loop would serve a plain request during one second: its head (that second's
/// Age) and complete data file. Another loop may answer with it while the second and the store's epoch hold.
/// A data file is never rewritten in place, so bytes match the head; a copy leases its resource.
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
    /// The ttl under the transparent modes' policy; nil: it would not serve it (owner's).
    package let transparentTTL: Int?
    /// The whole body of a small object (`PlainHitCache`); never for an encrypted file.
    package let body: [UInt8]?

    /// With its body read; nil when encrypted, over `limit`, or the read fails or is short.
    package func withBody(limit: Int) -> PlainHit? {
        guard !file.isEncrypted, let total = info.totalLength, total > 0, total <= Int64(limit) else { return nil }
        var read = false
        // Uninitialized: zeroing 32 KiB first cost as much as the read.
        let bytes = [UInt8](unsafeUninitializedCapacity: Int(total)) { buffer, count in
            read = file.read(0..<total, into: UnsafeMutableRawBufferPointer(buffer)) != nil
            count = read ? Int(total) : 0
        }
        guard read else { return nil }
        return PlainHit(info: info, middle: middle, file: file, lease: lease, second: second, epoch: epoch,
                        transparentTTL: transparentTTL, body: bytes)
    }

    package func isCurrent(second now: Int64, epoch current: Int) -> Bool {
        now == second && current == epoch
    }
}

/// Keeps a resource from eviction: taken on the owner loop, handed back there by a last holder on any thread.
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
