import Synchronization

/// Counts changes that can invalidate what other loops were told about a
/// complete resource (a new version, a new head, removal). Bumped on the
/// store's loop; read from any loop with one atomic load, no lock: a copy
/// of a hit made at epoch N is used only while the epoch is still N.
package final class StoreEpoch: Sendable {
    private let value = Atomic<Int>(0)

    package init() {}

    /// The current epoch (acquire: what changed before a bump is seen with it).
    package var current: Int { value.load(ordering: .acquiring) }

    /// Something a copy could depend on changed.
    package func bump() { value.add(1, ordering: .releasing) }
}
