import CacheIO
import Glibc
import Logging

/// The cache folder: one sub-folder per resource, keyed by the SHA-256 of
/// its cache key. Loop thread only, except `init` which scans the folder.
package final class ResourceStore {
    package let root: String
    let loop: EventLoop
    let logger: Logger
    /// Unflushed bytes after which metadata is written during a download.
    package var flushThreshold: Int64 = 8 << 20
    package private(set) var resources: [String: Resource] = [:]
    /// A ready folder for the next new resource (see SpareFolder).
    let spare: SpareFolder

    private var resourcesRoot: String { root + "/resources" }

    /// Opens (creating if needed) a cache folder and loads every resource's metadata.
    package init(root: String, loop: EventLoop, logger: Logger) throws(StorageError) {
        self.root = root
        self.loop = loop
        self.logger = logger
        guard FileIO.makeDirectories(root + "/resources") else {
            throw StorageError("cannot create cache folder \(root): \(FileIO.errorText())")
        }
        spare = SpareFolder(parent: root + "/spare")
        load()
        spare.prepare()
    }

    /// Reads every resource folder; folders without valid metadata are
    /// leftovers of a crash before their first flush and are removed.
    private func load() {
        var removed = 0
        for name in FileIO.listDirectory(resourcesRoot) {
            let directory = resourcesRoot + "/" + name
            guard let bytes = FileIO.readAll(directory + "/meta"),
                  var metadata = ResourceMetadata(decoding: String(decoding: bytes, as: UTF8.self)),
                  name.utf8.count == 64 else {
                FileIO.removeTree(directory)
                removed += 1
                continue
            }
            // Never claim bytes beyond the data file's end.
            let size = FileIO.fileSize(directory + "/data") ?? 0
            metadata.ranges.clip(to: size)
            resources[name] = Resource(key: name, directory: directory, metadata: metadata, store: self)
        }
        if removed > 0 { logger.info("removed \(removed) incomplete cache entries") }
        logger.debug("loaded \(resources.count) cached resources from \(root)")
    }

    /// The resource for a cache key (the mapped URL), created empty if unknown.
    package func resource(forKey cacheKey: String, url: String) -> Resource {
        let key = Digest.sha256Hex(cacheKey)
        if let existing = resources[key] { return existing }
        let resource = Resource(key: key, directory: resourcesRoot + "/" + key,
                                metadata: ResourceMetadata(url: url, lastAccess: Int64(time(nil))), store: self)
        resources[key] = resource
        return resource
    }

    /// Syncs the data file, then atomically replaces the metadata, off the loop.
    /// One flush per resource at a time; requests during one coalesce into one more.
    func flush(_ resource: Resource) {
        loop.assertInLoop()
        guard resource.needsFlush else { return }
        if resource.flushing {
            resource.flushAgain = true
            return
        }
        resource.flushing = true
        resource.needsFlush = false
        resource.unflushedBytes = 0
        let snapshot = resource.pendingMetadata()
        let file = resource.openFile
        let directory = resource.directory
        loop.offload({ () -> Bool in
            Self.persist(snapshot, file: file, directory: directory)
        }, done: { [logger] ok in
            resource.flushing = false
            if ok {
                resource.didFlush(snapshot)
            } else {
                logger.warning("cannot write metadata in \(directory): \(FileIO.errorText())")
            }
            if resource.flushAgain {
                resource.flushAgain = false
                resource.needsFlush = true
                self.flush(resource)
            }
        })
    }

    /// Blocking: data first, then the metadata that claims it.
    private static func persist(_ metadata: ResourceMetadata, file: DataFile?, directory: String) -> Bool {
        if let file, !file.sync() { return false }
        guard FileIO.makeDirectory(directory) else { return false }
        return FileIO.writeAtomically(directory + "/meta", Array(metadata.encoded().utf8))
    }

    /// Flushes every resource synchronously (shutdown; blocking is acceptable there).
    package func flushAllNow() {
        for resource in resources.values where resource.needsFlush || resource.flushAgain {
            if resource.flushing {
                // Its completion flushes again; the loop's stop waits for that.
                resource.flushAgain = true
                continue
            }
            let snapshot = resource.pendingMetadata()
            if Self.persist(snapshot, file: resource.openFile, directory: resource.directory) {
                resource.didFlush(snapshot)
                resource.needsFlush = false
                resource.flushAgain = false
            }
        }
    }
}
