import Backend
import Foundation
import GenerationVocabulary

extension TranscriptEntry {
    /// A response's answer as the transcript keeps it: with a reader (tools), its text,
    /// reasoning and complete calls apart; otherwise the text as generated.
    mutating func keep(_ text: String, final: Bool, reader: (any TurnAnswerReader)?) {
        guard let reader else {
            content = text
            return
        }
        let message = reader.message(text, final: final)
        content = message.content
        reasoning = message.reasoning
        toolCalls = (message.toolCalls ?? []).isEmpty ? nil : message.toolCalls
    }
}

extension Session {
    /// The prompt and the completion budget of a request against the transcript as it is now.
    func plan(_ request: TurnRequest, model: any GenerationBackend) throws(SessionError) -> (
        prompt: PreparedPrompt, maxTokens: Int
    ) {
        let prompt: PreparedPrompt
        do {
            // The instructions are the transcript's first entry, so they come as its system message.
            var messages = conversationMessages() + request.toolResults
            if !request.prompt.isEmpty { messages.append(ChatMessage(role: .user, content: request.prompt)) }
            let input =
                request.parameters.reader?.input(messages) ?? .conversation(instructions: nil, messages: messages)
            prompt = try model.prepare(input)
        } catch {
            throw .chatTemplate(error)
        }
        // The transcript's whole prompt against the same limits as a stateless request's.
        do throws(GenerationLimits.Violation) {
            let maxTokens = try env.limits.budget(
                promptTokens: prompt.tokenCount, requestedMaxTokens: request.parameters.maxTokens,
                contextLength: model.contextLength)
            return (prompt, maxTokens)
        } catch {
            switch error {
            case .contextOverflow(let p, let m, let c):
                count("inferd_session_errors_total", ["code": "context_length_exceeded"])
                throw .generation(.contextOverflow(promptTokens: p, maxTokens: m, contextLength: c))
            default:
                // The route checked the request's own numbers before admitting it.
                throw .generation(.invalidOption(name: "max_tokens", reason: "\(error)"))
            }
        }
    }

    /// Runs the active request's generation (inside the Task this actor owns) and records its end
    /// (under the session's lease when the store is shared: see `executeTurn`).
    func executeLeasedTurn(_ requestID: String) async -> TurnOutcome {
        let turn = turns[requestID]!
        let request = turn.request
        let model = turn.model
        if let edit = request.edit { return await executeEdit(requestID, edit, model: model) }
        if let deadline = request.deadline, deadline <= env.clock.now {
            // It expired just as its turn came: refused before it touches the transcript.
            turns[requestID]!.lifecycle.refuse()
            count("inferd_session_errors_total", ["code": "timeout"])
            return endFailed(requestID, .generation(.queueTimeout))
        }
        let planned: (prompt: PreparedPrompt, maxTokens: Int)
        do {
            planned = try plan(request, model: model)
        } catch {
            // The transcript grew while it waited: an error, not a cancellation; nothing recorded.
            turns[requestID]!.lifecycle.refuse()
            return endFailed(requestID, error)
        }
        // The prompt is accepted: it (after any tool results) and an in-progress response enter
        // the transcript together.
        var inputs = request.toolResults.enumerated().map { i, result in
            TranscriptEntry(
                position: nextPosition + i, kind: .toolResult, content: result.content, requestID: requestID,
                toolCallID: result.toolCallID)
        }
        if !request.prompt.isEmpty {
            inputs.append(
                TranscriptEntry(
                    position: nextPosition + inputs.count, kind: .prompt, content: request.prompt,
                    requestID: requestID))
        }
        var responseEntry = TranscriptEntry(
            position: nextPosition + inputs.count, kind: .response, content: "", requestID: requestID,
            status: .inProgress)
        do {
            try await env.store.beginTurn(session: id, inputs: inputs, response: responseEntry)
        } catch {
            turns[requestID]!.lifecycle.refuse()
            env.logger.error("session store write failed", ["session_id": id, "error": error.description])
            return endFailed(requestID, Self.storeFailure(error))
        }
        nextPosition += inputs.count + 1
        entries += inputs + [responseEntry]

        // The kept cache, if it still exists and is big enough; otherwise a bigger one with room to
        // grow (twice what this turn needs), so growing, which recomputes the prompt once, is rare.
        // A backend that keeps no caches runs the whole transcript each turn.
        let cache = model.kvCache
        let needed = planned.prompt.tokenCount + planned.maxTokens
        let capacity = min(model.contextLength, (max(2 * needed, 1024) + 1023) / 1024 * 1024)
        let previous = cache.flatMap { env.caches.checkOut(id, reservingBytes: capacity * $0.kvBytesPerToken) }
        // Earlier turns but no cache here (dropped under kv_cache_mib, gone with a restart, or the
        // session's turns ran on another server): the whole prompt is computed from the transcript.
        if cache != nil, previous == nil,
            entries.contains(where: {
                ($0.kind == .response && [.completed, .cancelled].contains($0.status)) || $0.kind.itemRole != nil
            })
        {
            count("inferd_session_cache_rebuilds_total", [:])
        }
        let sequenceToUse: (any PredictorSequence)?
        if let previous, previous.capacity >= needed {
            sequenceToUse = previous
        } else {
            sequenceToUse = cache?.makeSequence(capacity: capacity)
        }
        // A cache this turn did not touch: what a discarded turn goes back to.
        let untouched = previous.flatMap { $0 === sequenceToUse ? nil : $0 }
        // What of the cache belongs to earlier turns: a discarded turn rolls back to this.
        let shared = zip(sequenceToUse?.tokens ?? [], planned.prompt.tokens ?? []).prefix { $0 == $1 }.count
        let rollback = min(shared, planned.prompt.tokenCount - 1)

        let gate = SnapshotGate(forward: turn.observer ?? { _ in })
        turns[requestID]!.gate = gate
        if turns[requestID]!.lifecycle.stopReason != nil { gate.close() }
        var generation = BackendRequest(
            prompt: planned.prompt, maxTokens: planned.maxTokens, sampling: request.parameters.sampling,
            stop: request.parameters.stop, sequence: sequenceToUse, label: requestID)
        generation.ignoreEndOfGeneration = request.parameters.ignoreEndOfGeneration
        // The session's owner is its tenant (fair shares); its KV cache is its own anyway.
        generation.scope = GenerationScope(tenant: owner ?? "")
        generation.priority = request.priority
        generation.deadline = request.deadline
        generation.constraint = request.parameters.constraint
        generation.logprobs = request.parameters.logprobs

        probe.enter()
        let result: Result<GenerationResult, GenerationError>
        do {
            result = .success(
                try await model.generate(generation) { event in gate.publish(event) })
        } catch {
            result = .failure(error)
        }
        probe.leave()
        if let pause = env.hooks.beforeRecord { await pause(requestID) }

        // Whichever the session records first wins: a stop recorded by now beats this result.
        let resolution = turns[requestID]!.lifecycle.engineReturned(result.map(\.finishReason))
        var outcome = TurnOutcome(
            requestID: requestID, sessionID: id, status: .completed, content: "",
            finishReason: try? result.get().finishReason, usage: try? result.get().usage)
        outcome.stepsAfterCancel = (try? result.get().stepsAfterCancel) ?? 0
        outcome.timings = try? result.get().timings
        outcome.constraintSatisfied = try? result.get().constraintSatisfied
        outcome.stopSequence = try? result.get().stopSequence
        var keepCache = true
        var sequenceToKeep = sequenceToUse
        switch resolution {
        case .completed:
            let r = try! result.get()
            gate.close()
            outcome.content = r.content
            responseEntry.keep(r.content, final: r.finishReason != .length, reader: request.parameters.reader)
            responseEntry.status = .completed
            responseEntry.finishReason = r.finishReason.rawValue
        case .cancelled(let reason):
            // What the client saw last is what the transcript keeps: never more, never a repeat.
            let shown = gate.close()
            outcome.status = .cancelled
            outcome.reason = reason
            outcome.finishReason = .cancelled
            // A superseded request's output is stale: it publishes nothing and leaves no turn.
            let discard = request.onCancel == .discard || reason == .superseded
            outcome.content = reason == .superseded ? "" : shown
            if discard {
                if let untouched {
                    sequenceToKeep = untouched
                } else {
                    sequenceToUse?.truncate(to: min(rollback, sequenceToUse?.count ?? 0))
                }
                await removeTurn(inputs.map(\.position) + [responseEntry.position])
            } else {
                // A call still being written when the turn stopped is no call (`final: false`).
                responseEntry.keep(shown, final: false, reader: request.parameters.reader)
                responseEntry.status = .cancelled
                responseEntry.finishReason = FinishReason.cancelled.rawValue
                responseEntry.reason = reason.rawValue
            }
        case .failed:
            gate.close()
            let error: GenerationError
            if case .failure(let e) = result { error = e } else { error = .computeFailed("unknown") }
            outcome.status = .failed
            outcome.error = .generation(error)
            responseEntry.status = .failed
            switch error {
            case .queueTimeout, .serverBusy, .tenantBusy:
                // Refused, or timed out before it got a place in the engine: the cache is untouched.
                keepCache = true
            default:
                keepCache = false
            }
            count("inferd_session_errors_total", ["code": error.code])
        }
        if responseEntry.status != .inProgress {
            replaceEntry(responseEntry)
            do {
                try await env.store.finishTurn(session: id, response: responseEntry)
            } catch {
                // The end is not recorded: the store keeps the response in progress, and it
                // becomes `interrupted` (never a half-written turn). The requester is told.
                env.logger.error("session store write failed", ["session_id": id, "error": error.description])
                outcome.status = .failed
                outcome.error = Self.storeFailure(error)
            }
        }
        if keepCache, let cache, let sequenceToKeep {
            let dropped = env.caches.checkIn(
                id, sequence: sequenceToKeep, bytes: sequenceToKeep.capacity * cache.kvBytesPerToken)
            for owner in dropped {
                count("inferd_kv_cache_evictions_total", [:])
                env.logger.info("kv cache dropped", ["session_id": owner, "budget_bytes": "\(env.caches.budgetBytes)"])
            }
        } else {
            env.caches.drop(id)
        }
        count("inferd_session_turns_total", ["status": outcome.status.rawValue])
        log(outcome)
        finish(requestID, outcome)
        activeTask = nil
        advanceQueue()
        if let pause = env.hooks.afterRecord { await pause(requestID) }
        return outcome
    }

    func endFailed(_ requestID: String, _ error: SessionError) -> TurnOutcome {
        var outcome = TurnOutcome(requestID: requestID, sessionID: id, status: .failed, content: "")
        outcome.error = error
        count("inferd_session_turns_total", ["status": "failed"])
        log(outcome)
        finish(requestID, outcome)
        activeTask = nil
        advanceQueue()
        return outcome
    }

    private func replaceEntry(_ entry: TranscriptEntry) {
        if let i = entries.firstIndex(where: { $0.position == entry.position }) { entries[i] = entry }
    }

    private func removeTurn(_ positions: [Int]) async {
        entries.removeAll { positions.contains($0.position) }
        do {
            try await env.store.removeEntries(session: id, positions: positions)
        } catch {
            env.logger.error("session store write failed", ["session_id": id, "error": error.description])
        }
    }

    func log(_ o: TurnOutcome) {
        env.logger.info(
            "session turn finished",
            [
                "session_id": id, "request_id": o.requestID, "status": o.status.rawValue,
                "reason": o.reason?.rawValue ?? "", "finish_reason": o.finishReason?.rawValue ?? "",
                "prompt_tokens": "\(o.usage?.promptTokens ?? 0)", "cached_tokens": "\(o.usage?.cachedTokens ?? 0)",
                "completion_tokens": "\(o.usage?.completionTokens ?? 0)", "steps_after_cancel": "\(o.stepsAfterCancel)",
                "error": o.error.map { "\($0)" } ?? "",
            ])
    }
}
