/// Every entry of one shard in a 64-byte record: what lookups, the size limit and LRU order need (the rest is
/// in the metadata). Records live in one array mapped by an open-addressing table (linear probing, at most
/// 3/4 full); the LRU order is a doubly linked list through them: touch, insert and remove cost the same at
/// any size, eviction takes the oldest unsorted. Pinned entries stay out of the list. Loop thread only.
package struct EntryIndex: Sendable {
    package struct Record: Sendable, Equatable {
        package var key: EntryKey
        package var bytes: Int64  // bytes held on disk (what the size limit counts)
        package var lastAccess: Int64  // milliseconds since 1970
        fileprivate var prev: Int32
        fileprivate var next: Int32
        /// The first 32 bits of the URL's primary store key: the shard, and which entries are one URL's.
        package var route: UInt32
        package var flags: UInt32
        package var isPinned: Bool { flags & Self.pinned != 0 }
        package static let pinned: UInt32 = 1

        package init(key: EntryKey, bytes: Int64, lastAccess: Int64, route: UInt32, flags: UInt32) {
            self.key = key
            self.bytes = bytes
            self.lastAccess = lastAccess
            self.route = route
            self.flags = flags
            prev = Self.unlinked
            next = Self.unlinked
        }

        /// Equal entries; where they sit in an index's list is not compared.
        package static func == (a: Record, b: Record) -> Bool {
            a.key == b.key && a.bytes == b.bytes && a.lastAccess == b.lastAccess && a.route == b.route
                && a.flags == b.flags
        }

        fileprivate static let unlinked: Int32 = -2
        fileprivate var isLinked: Bool { prev != Self.unlinked }
    }

    private var records: ContiguousArray<Record> = []
    private var table: [Int32]  // slots of `records` by key hash; -1 is empty
    private var mask: Int
    private var head: Int32 = -1  // least and most recently used unpinned entries (-1: none)
    private var tail: Int32 = -1
    package private(set) var totalBytes: Int64 = 0  // bytes of every entry, and of the pinned ones
    package private(set) var pinnedBytes: Int64 = 0

    package init(capacity: Int = 0) {
        var size = 16
        while size * 3 < max(capacity, 1) * 4 { size <<= 1 }
        table = Array(repeating: -1, count: size)
        mask = size - 1
        records.reserveCapacity(capacity)
    }

    package var count: Int { records.count }

    package func find(_ key: EntryKey) -> Record? { slot(of: key).map { records[Int($0)] } }

    package func contains(_ key: EntryKey) -> Bool { slot(of: key) != nil }
    private func home(_ key: EntryKey) -> Int { Int(truncatingIfNeeded: key.w1) & mask }

    private func slot(of key: EntryKey) -> Int32? {
        var position = home(key)
        while true {
            let slot = table[position]
            if slot < 0 { return nil }
            if records[Int(slot)].key == key { return slot }
            position = (position + 1) & mask
        }
    }

    /// Inserts an entry (most recently used), or replaces its fields, keeping its place unless (un)pinned.
    package mutating func put(_ record: Record) {
        if let slot = slot(of: record.key) {
            let index = Int(slot)
            let old = records[index]
            totalBytes += record.bytes - old.bytes
            pinnedBytes -= old.isPinned ? old.bytes : 0
            pinnedBytes += record.isPinned ? record.bytes : 0
            records[index].bytes = record.bytes
            records[index].route = record.route
            records[index].flags = record.flags
            records[index].lastAccess = record.lastAccess
            if old.isPinned != record.isPinned {
                if record.isPinned { unlink(slot) } else { linkByTime(slot) }
            }
            return
        }
        if (records.count + 1) * 4 > table.count * 3 { grow() }
        let slot = Int32(records.count)
        var fresh = record
        fresh.prev = Record.unlinked
        fresh.next = Record.unlinked
        records.append(fresh)
        var position = home(record.key)
        while table[position] >= 0 { position = (position + 1) & mask }
        table[position] = slot
        totalBytes += record.bytes
        if record.isPinned { pinnedBytes += record.bytes } else { linkAtTail(slot) }
    }

    /// Sets an entry's bytes and flags (its place changes only when (un)pinned).
    package mutating func update(_ key: EntryKey, bytes: Int64, flags: UInt32) {
        guard let slot = slot(of: key) else { return }
        var record = records[Int(slot)]
        record.bytes = bytes
        record.flags = flags
        put(record)
    }

    /// Makes an entry the most recently used; its access time before (nil: no such entry).
    @discardableResult
    package mutating func touch(_ key: EntryKey, at time: Int64) -> Int64? {
        guard let slot = slot(of: key) else { return nil }
        let before = records[Int(slot)].lastAccess
        records[Int(slot)].lastAccess = time
        guard records[Int(slot)].isLinked, tail != slot else { return before }
        unlink(slot)
        linkAtTail(slot)
        return before
    }

    @discardableResult
    package mutating func remove(_ key: EntryKey) -> Record? {
        guard let slot = slot(of: key) else { return nil }
        let removed = records[Int(slot)]
        unlink(slot)
        totalBytes -= removed.bytes
        if removed.isPinned { pinnedBytes -= removed.bytes }
        removeFromTable(key)
        // The last record moves into the hole: the array stays dense.
        let last = Int32(records.count - 1)
        if slot != last {
            let moved = records[Int(last)]
            records[Int(slot)] = moved
            if moved.isLinked {
                if moved.prev >= 0 { records[Int(moved.prev)].next = slot } else { head = slot }
                if moved.next >= 0 { records[Int(moved.next)].prev = slot } else { tail = slot }
            }
            var position = home(moved.key)
            while table[position] != last { position = (position + 1) & mask }
            table[position] = slot
        }
        records.removeLast()
        return removed
    }

    /// Unpinned entries, least recently used first.
    package func oldestFirst() -> some Sequence<Record> {
        sequence(state: head) { [records] cursor in
            guard cursor >= 0 else { return nil }
            defer { cursor = records[Int(cursor)].next }
            return records[Int(cursor)]
        }
    }

    /// Pinned entries (in no particular order).
    package var pinned: [Record] { records.filter(\.isPinned) }

    /// Pinned entries, then the others oldest first: re-inserted so, they rebuild the same LRU order.
    package func inOrder() -> ContiguousArray<Record> {
        var result = ContiguousArray<Record>()
        result.reserveCapacity(records.count)
        for record in records where record.isPinned { result.append(record) }
        var cursor = head
        while cursor >= 0 {
            result.append(records[Int(cursor)])
            cursor = records[Int(cursor)].next
        }
        return result
    }

    /// Every entry, in storage order (for scans that need no order).
    package var all: ContiguousArray<Record> { records }

    // MARK: list and table upkeep

    private mutating func unlink(_ slot: Int32) {
        let record = records[Int(slot)]
        guard record.isLinked else { return }
        if record.prev >= 0 { records[Int(record.prev)].next = record.next } else { head = record.next }
        if record.next >= 0 { records[Int(record.next)].prev = record.prev } else { tail = record.prev }
        records[Int(slot)].prev = Record.unlinked
        records[Int(slot)].next = Record.unlinked
    }

    private mutating func linkAtTail(_ slot: Int32) {
        records[Int(slot)].prev = tail
        records[Int(slot)].next = -1
        if tail >= 0 { records[Int(tail)].next = slot } else { head = slot }
        tail = slot
    }

    /// An unpinned entry rejoins the list by its last use (walked from the old end: usually short).
    private mutating func linkByTime(_ slot: Int32) {
        let time = records[Int(slot)].lastAccess
        var cursor = head
        while cursor >= 0 && records[Int(cursor)].lastAccess <= time { cursor = records[Int(cursor)].next }
        guard cursor >= 0 else { return linkAtTail(slot) }
        let before = records[Int(cursor)].prev
        records[Int(slot)].prev = before
        records[Int(slot)].next = cursor
        records[Int(cursor)].prev = slot
        if before >= 0 { records[Int(before)].next = slot } else { head = slot }
    }

    /// Backward-shift deletion: later members of the probe run move up (no lookup stops at a new hole).
    private mutating func removeFromTable(_ key: EntryKey) {
        var hole = home(key)
        while records[Int(table[hole])].key != key { hole = (hole + 1) & mask }
        var position = hole
        while true {
            position = (position + 1) & mask
            let slot = table[position]
            if slot < 0 { break }
            let wanted = home(records[Int(slot)].key)
            // Moves up unless its home lies (cyclically) after the hole.
            let distanceToHole = (hole - wanted) & mask
            let distanceToHere = (position - wanted) & mask
            if distanceToHole <= distanceToHere {
                table[hole] = slot
                hole = position
            }
        }
        table[hole] = -1
    }

    private mutating func grow() {
        let size = table.count * 2
        table = Array(repeating: -1, count: size)
        mask = size - 1
        for (slot, record) in records.enumerated() {
            var position = home(record.key)
            while table[position] >= 0 { position = (position + 1) & mask }
            table[position] = Int32(slot)
        }
    }
}
