import Synchronization

/// Counts changes that can invalidate what other loops hold of a complete resource (version, head,
/// removal): a hit copied at epoch N is used only while the epoch is N. Read anywhere, one atomic load.
package final class StoreEpoch: Sendable {
    private let value = Atomic<Int>(0)

    package init() {}

    /// The current epoch (acquire: what changed before a bump is seen with it).
    package var current: Int { value.load(ordering: .acquiring) }

    package func bump() { value.add(1, ordering: .releasing) }
}
