import HTTPServer

/// How a response's generation runs and is answered, for stateless responses and a conversation's alike.
extension ResponseArchive {
    /// Runs a response's generation as its request asked, and ends it with `finish`:
    /// - background: in a Task the server owns (the request's cancellation never reaches it); the
    ///   answer is the queued response, or with `stream` its events from the start, followed live
    ///   (a client that drops that stream may resume it with `GET …?stream=true`);
    /// - streamed: in the request's Task, its events as they come;
    /// - else: in the request's Task, the final response once it ended.
    func answer(
        _ generation: AdmittedGeneration, run: ResponseRun, background: Bool, stream: Bool,
        finish: @escaping @Sendable (GenerationOutcome) async -> ResponseRecord
    ) async throws -> HTTPResponse {
        if background {
            let task = Task { () -> Void in
                let outcome = await runBackground(generation, run: run)
                _ = await finish(outcome)
            }
            live.setTask(run.id, task)
            guard stream else { return .json(run.record.response) }
            return .eventStream { stream in await Self.follow(run, after: -1, to: stream) }
        }
        if stream {
            return .eventStream { stream in
                run.subscribe(after: -1) { e in Self.send(e, to: stream) }
                _ = await finish(await generation.run(observer: run.apply))
            }
        }
        let outcome = await generation.run(observer: run.apply)
        let final = await finish(outcome)
        if outcome.status == .failed { throw OpenAIError(outcome.error ?? .internalError()) }
        return .json(final.response)
    }

    /// Sends `run`'s events after `after` (-1: from the first), then live ones until it ends or the
    /// client leaves (which ends only this stream, never the response).
    static func follow(_ run: ResponseRun, after: Int, to stream: EventStream) async {
        let (events, continuation) = AsyncStream.makeStream(of: ResponseStreamEvent.self)
        let token = run.subscribe(after: after) { e in
            continuation.yield(e)
            if e.isTerminal { continuation.finish() }
        }
        if run.record.response.isFinished { continuation.finish() }
        // The stream's own Task: its client leaving ends this loop, never the response.
        for await e in events { send(e, to: stream) }
        run.unsubscribe(token)
    }

    /// One event on a Responses stream: its SSE `id:` is its `sequence_number`, on the first
    /// connection as on a resumed one, so a browser `EventSource` that reconnects sends the last
    /// one it saw as `Last-Event-ID` and `GET /v1/responses/{id}?stream=true` continues after it.
    static func send(_ e: ResponseStreamEvent, to stream: EventStream) {
        stream.send(event: e.type, data: WireJSON.string(e), id: e.sequenceNumber)
    }

    /// A background response's generation, run to its end in the Task the server keeps for it. On a
    /// shared store, a watcher beside it stops it when another replica recorded a cancel in the
    /// store (`requestCancel`), as a local cancel would, and writes its status when it changes
    /// (`queued` → `in_progress`), so the other replicas read where it is; its text is written
    /// when it ends.
    func runBackground(_ generation: AdmittedGeneration, run: ResponseRun) async -> GenerationOutcome {
        guard store.isShared else { return await generation.run(observer: run.apply) }
        return await withTaskGroup(of: GenerationOutcome?.self) { group in
            group.addTask { await generation.run(observer: run.apply) }
            group.addTask {
                var written = run.record.response.status
                while (try? await clock.sleep(for: Self.storePollInterval)) != nil {
                    if (try? await store.isCancelRequested(run.id)) == true { break }
                    let now = run.record
                    // The finisher writes the end; this Task has stopped before it does.
                    if now.response.status != written, !now.response.isFinished {
                        await persist(now, applyRetention: false)
                        written = now.response.status
                    }
                }
                return nil
            }
            var outcome: GenerationOutcome?
            while let next = await group.next() {
                // Either the generation ended (stop watching) or a cancel was asked (stop it).
                group.cancelAll()
                if let next { outcome = next }
            }
            return outcome
                ?? GenerationOutcome(
                    failure: .serviceUnavailable("the response ended without a result", code: .serverError))
        }
    }
}
