/// The drivers' half of the one machine convention (`mutating func
/// handle(_ event: Event) -> [Action]`): an event raised while a machine's
/// actions are performed is queued and handled after them, in order, never
/// by re-entering the machine, so no call stack grows with traffic.
///
///     func drive(_ event: Event) {
///         guard events.push(event) else { return }  // a drive further up handles it
///         while let next = events.next() { perform(machine.handle(next)) }
///     }
package struct EventQueue<Event> {
    private var pending: [Event] = []
    /// A drive is handling the queue (further up the stack).
    package private(set) var isDriving = false

    package init() {}

    /// Queues `event`; true when the caller is to handle the queue now
    /// (`next()` until nil), false when a drive further up will.
    package mutating func push(_ event: Event) -> Bool {
        pending.append(event)
        guard !isDriving else { return false }
        isDriving = true
        return true
    }

    /// Claims the drive for work done in place before the queue is handled
    /// (an event fed to the machine without queueing it); false when a drive
    /// further up holds it. The caller then handles the queue (`next()` until nil).
    package mutating func begin() -> Bool {
        guard !isDriving else { return false }
        isDriving = true
        return true
    }

    /// The next event to handle; nil when there is none, which ends the drive.
    package mutating func next() -> Event? {
        guard !pending.isEmpty else {
            isDriving = false
            return nil
        }
        return pending.removeFirst()
    }

    /// Drops what is queued (the driver is closing).
    package mutating func removeAll() { pending.removeAll() }
}
