import Backend
import GenerationVocabulary

/// Transcript edits by hand (OpenAI's conversation items). An edit is a request of the
/// session's queue: it runs only in the active slot, so never while a turn generates, and with a
/// shared store under the session's lease on a transcript re-read from the store
/// (`executeTurn`), exactly as a turn would. It is written in one transaction.
extension Session {
    /// Applies `edit` in the active slot and records it. A deletion also cuts the kept KV cache
    /// back to what the edited transcript still shares with it, so nothing deleted stays in it.
    func executeEdit(_ requestID: String, _ edit: TranscriptEdit, model: any GenerationBackend) async -> TurnOutcome {
        var adding: [TranscriptEntry] = []
        var deleting: [Int] = []
        switch edit {
        case .append(let messages):
            for (i, m) in messages.enumerated() {
                // The caller checked the roles; an unknown one is refused rather than guessed.
                guard let kind = TranscriptEntry.Kind.item(role: m.role) else {
                    turns[requestID]!.lifecycle.refuse()
                    return endEdit(requestID, .storage("unknown role '\(m.role)'"))
                }
                adding.append(TranscriptEntry(position: nextPosition + i, kind: kind, content: m.text))
            }
        case .delete(let position):
            guard entries.contains(where: { $0.position == position && $0.kind != .deleted }) else {
                turns[requestID]!.lifecycle.refuse()
                return endEdit(requestID, .entryNotFound(position: position))
            }
            deleting = [position]
        }
        do {
            try await env.store.editTranscript(session: id, adding: adding, deleting: deleting)
        } catch {
            turns[requestID]!.lifecycle.refuse()
            env.logger.error("session store write failed", ["session_id": id, "error": error.description])
            return endEdit(requestID, Self.storeFailure(error))
        }
        nextPosition += adding.count
        entries += adding
        for p in deleting {
            if let i = entries.firstIndex(where: { $0.position == p }) {
                entries[i] = TranscriptEntry(position: p, kind: .deleted, content: "")
            }
        }
        if !deleting.isEmpty { trimCache(model) }
        _ = turns[requestID]!.lifecycle.engineReturned(.success(.stop))
        var outcome = TurnOutcome(requestID: requestID, sessionID: id, status: .completed, content: "")
        outcome.addedEntries = adding
        env.logger.info(
            "session transcript edited",
            [
                "session_id": id, "request_id": requestID, "added": "\(adding.count)",
                "deleted": deleting.map(String.init).joined(separator: ","),
            ])
        return endEdit(requestID, outcome)
    }

    private func endEdit(_ requestID: String, _ error: SessionError) -> TurnOutcome {
        var outcome = TurnOutcome(requestID: requestID, sessionID: id, status: .failed, content: "")
        outcome.error = error
        return endEdit(requestID, outcome)
    }

    private func endEdit(_ requestID: String, _ outcome: TurnOutcome) -> TurnOutcome {
        finish(requestID, outcome)
        activeTask = nil
        advanceQueue()
        return outcome
    }

    /// Cuts the kept KV cache to the longest prefix it shares with the edited transcript as the
    /// model sees it. (The next turn would find the same prefix by itself, since a kept cache
    /// is only ever continued where its tokens equal the prompt's; cutting now means no deleted
    /// text is kept in memory, and the next turn's `cached_tokens` shows what remained.)
    func trimCache(_ model: any GenerationBackend) {
        guard let cache = model.kvCache, let sequence = env.caches.checkOut(id, reservingBytes: 0) else { return }
        guard
            let tokens = try? model.prepare(.conversation(instructions: nil, messages: conversationMessages())).tokens
        else {
            env.caches.drop(id)
            return
        }
        let shared = zip(sequence.tokens, tokens).prefix { $0 == $1 }.count
        sequence.truncate(to: min(shared, sequence.count))
        env.caches.checkIn(id, sequence: sequence, bytes: sequence.capacity * cache.kvBytesPerToken)
    }
}
