/// The drivers' half of `mutating func handle(_ event: Event) -> [Action]`: an event raised
/// while actions are performed is queued and handled after them, in order, never by
/// re-entering the machine, so no call stack grows with traffic.
///
///     func drive(_ event: Event) {
///         guard events.push(event) else { return }  // a drive further up handles it
///         while let next = events.next() { perform(machine.handle(next)) }
///     }
///
/// Public and inlinable to be specialized per event type: Swift 6.3 does not specialize
/// `@inlinable package` generics across modules (~1,500 instructions per event on the hit
/// path). CacheIO is not a product, so `public` exposes nothing outside the package.
public struct EventQueue<Event> {
    @usableFromInline var pending: [Event] = []
    @usableFromInline var driving = false

    @inlinable public init() {}

    /// True when the caller is to handle the queue now (`next()` until nil), false when a
    /// drive further up will.
    @inlinable public mutating func push(_ event: Event) -> Bool {
        pending.append(event)
        return begin()
    }

    /// Claims the drive for an event fed to the machine unqueued; false when a drive further
    /// up holds it. The caller then handles the queue.
    @inlinable public mutating func begin() -> Bool {
        guard !driving else { return false }
        driving = true
        return true
    }

    /// Nil ends the drive.
    @inlinable public mutating func next() -> Event? {
        guard !pending.isEmpty else {
            driving = false
            return nil
        }
        return pending.removeFirst()
    }

    /// For a closing driver.
    @inlinable public mutating func removeAll() { pending.removeAll() }
}
