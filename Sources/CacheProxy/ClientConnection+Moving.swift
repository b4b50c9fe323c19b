import CacheHTTP

// Moving a connection between loops: to the loop that must answer a request, and back home once idle.

extension ClientConnection {
    /// Answers the request it was handed over with, or waits idle for the next one.
    func resume(_ request: (head: HTTPRequestHead, body: [UInt8]?)?) {
        guard let request else { return setTimer(server.configuration.connection.keepAliveTimeout) }
        guard events.begin() else { return }  // a connection just adopted: nothing drives it yet
        resumingHandOver = true
        handle(request.head, body: request.body)
        resumingHandOver = false
        processPending()
    }

    /// To another loop, with a request or idle home. Nothing is queued between responses: it detaches whole.
    func move(to link: LoopLink, _ request: (head: HTTPRequestHead, body: [UInt8]?)?) {
        guard !socket.isClosed else { return }
        let reading = socket.isReading
        guard let handed = socket.detach() else {
            socket.close()  // cannot happen between responses; never answer from the wrong loop
            return
        }
        timer?.cancel()
        timer = nil
        record = nil
        events.removeAll()
        server.connectionClosed(self)
        let moved = MovedConnection(socket: handed, machine: machine, request: request, peer: peer, reading: reading,
                                    home: home ?? LoopLink(server))
        link.run { $0.adopt(moved) }  // if that loop is gone, `handed` closes the socket
    }

    func handOver(_ head: HTTPRequestHead, body: [UInt8]? = nil, to index: Int) {
        moving = (head, body, server.peers[index])
        if events.begin() { processPending() }  // else the drive holding it moves the connection when done
    }
}
