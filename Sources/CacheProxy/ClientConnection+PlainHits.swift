import CacheHTTP
import CacheLoading

// Plain hits answered from copies (`PlainHit`): the owner loop's own, or the owner's on another loop.

extension ClientConnection {
    /// On the owning loop: a plain hit's copy, made on its first request this second; nil: needs a reader.
    func localCopy(_ head: HTTPRequestHead, url: OriginURL, storeKey: String) -> PlainHit? {
        guard PlainHitCache.isPlain(head) else { return nil }
        if let hit = server.plainHits.lookup(storeKey) {
            server.engine.store.touch(storeKey: storeKey)  // what the reader would have done
            return hit
        }
        guard let hit = server.plainHit(url: url, storeKey: storeKey) else { return nil }
        return server.plainHits.keep(storeKey, hit)
    }

    /// On a loop not owning the resource: a hit of a complete, fresh one is answered from the owner's
    /// copy (asked for when there is none yet); anything else goes to the owner's loop.
    func answerFromCopy(_ head: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
                        owner: Int, transparent: Bool = false) {
        let hits = server.plainHits
        guard PlainHitCache.isPlain(head) else { return handOver(head, to: owner) }
        if let hit = hits.lookup(storeKey) {
            return serve(hit, head: head, url: url, urlString: urlString, storeKey: storeKey, transparent: transparent,
                         owner: owner)
        }
        hits.ask(url: url, key: storeKey, owner: server.peers[owner], from: server.peers[server.index]) { [weak self] hit in
            guard let self, !self.socket.isClosed else { return }
            guard let hit else { return self.handOver(head, to: owner) }
            self.serve(hit, head: head, url: url, urlString: urlString, storeKey: storeKey,
                       transparent: transparent, owner: owner)
        }
    }

    func serve(_ hit: PlainHit, head: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
               transparent: Bool, owner: Int) {
        if transparent && hit.transparentTTL == nil { return handOver(head, to: owner) }
        if owner != server.index {
            server.metrics.hitsOnOtherLoops += 1
            server.plainHits.served(storeKey, owner: owner, server.peers[owner])
        }
        let exchange = ProxyExchange(connection: self, request: head, url: url, urlString: urlString,
                                     storeKey: storeKey, server: server, transparent: transparent)
        self.exchange = exchange
        exchange.start(copy: hit)
    }
}
