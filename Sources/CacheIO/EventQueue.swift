/// The drivers' half of the one machine convention (`mutating func
/// handle(_ event: Event) -> [Action]`): an event raised while a machine's
/// actions are performed is queued and handled after them, in order, never
/// by re-entering the machine, so no call stack grows with traffic.
///
///     func drive(_ event: Event) {
///         guard events.push(event) else { return }  // a drive further up handles it
///         while let next = events.next() { perform(machine.handle(next)) }
///     }
///
/// Public and inlinable so that each driver gets it specialized for its event
/// type: Swift 6.3 does not specialize `@inlinable package` generics across
/// modules, and an unspecialized queue cost ~1,500 instructions per event on
/// the hit path (metadata lookups, a generic `removeFirst`). CacheIO is not a
/// product, so `public` here exposes nothing outside the package.
public struct EventQueue<Event> {
    @usableFromInline var pending: [Event] = []
    @usableFromInline var driving = false

    @inlinable public init() {}

    /// Queues `event`; true when the caller is to handle the queue now
    /// (`next()` until nil), false when a drive further up will.
    @inlinable public mutating func push(_ event: Event) -> Bool {
        pending.append(event)
        return begin()
    }

    /// Claims the drive for work done in place before the queue is handled
    /// (an event fed to the machine without queueing it); false when a drive
    /// further up holds it. The caller then handles the queue (`next()` until nil).
    @inlinable public mutating func begin() -> Bool {
        guard !driving else { return false }
        driving = true
        return true
    }

    /// The next event to handle; nil when there is none, which ends the drive.
    @inlinable public mutating func next() -> Event? {
        guard !pending.isEmpty else {
            driving = false
            return nil
        }
        return pending.removeFirst()
    }

    /// Drops what is queued (the driver is closing).
    @inlinable public mutating func removeAll() { pending.removeAll() }
}
