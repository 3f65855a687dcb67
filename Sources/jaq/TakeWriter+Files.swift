import AudioToolbox
import FoundationEssentials
import Glibc
import Synchronization

/// The writer thread's side that writes the files: a take flushed up to what every track can
/// write, the Broadcast Wave chunk, silence for lost and muted frames, the write calls.
extension TakeWriter {
    /// Writes every take frame all tracks have, and frees the buffers no track needs.
    func flushTake(final: Bool) {
        let (takeStart, end, preroll, keepsAll) = state.withLock { ($0.takeStart, $0.end, $0.preroll, $0.keepsFromQueueStart) }
        let last = held.last?.end ?? expectedQueueFrame ?? 0
        guard let takeStart else {
            // Waiting for the start: keep the pre-roll, the latency skew and the trigger slack
            // (everything, for a take that starts on a known frame).
            guard !keepsAll else { return }
            let keep = preroll + maxSkip + Int64(TakeWriter.triggerSlackSeconds * rate)
            while let first = held.first, first.end <= last - keep { release(held.removeFirst().buffer) }
            return
        }
        // Take frame t of track c is queue frame takeStart + skip[c] + t.
        var available = last - takeStart - maxSkip
        if end == nil && !final { available -= holdBack }
        // A gap may still be found in the last `muteHold` frames captured (the take's end too).
        if !final, !(end.map { available - muteHold >= $0 } ?? false) { available -= muteHold }
        var target = max(available, written)
        if let end { target = min(target, end) }
        if target > written {
            if written == 0 { writeBroadcastWave() }
            // Every file gets the frames, or (disk full, a write error) none does: the tracks of
            // a take always have the same length, and `written` is what each file holds.
            guard reserve(through: target, limit: final ? target : end) else { return }
            for file in files {
                writeFile(file, from: written, to: target, takeStart: takeStart)
                guard state.withLock({ $0.error }) == nil else { return }
            }
            written = target
            writtenAtomic.store(written, ordering: .relaxed)
        }
        // Buffers before take frame `written` of the earliest track are no longer needed; a
        // tape machine keeps the last pre-roll's worth too, for a take that follows at once.
        var needed = takeStart + minSkip + written
        if state.withLock({ $0.takesFollow }) { needed = min(needed, last - preroll - maxSkip - Int64(TakeWriter.triggerSlackSeconds * rate)) }
        while let first = held.first, first.end <= needed { release(held.removeFirst().buffer) }
    }

    /// Writes each file's Broadcast Wave chunk (its place on the timeline), before its first
    /// frame. A file that cannot take it is still recorded: the take matters more than its
    /// position, and the end-of-take report says what is missing.
    private func writeBroadcastWave() {
        guard let broadcast = state.withLock({ $0.broadcast }), broadcast.count == files.count else { return }
        for (file, chunk) in zip(files, broadcast) where file.take.carriesBroadcastWave {
            do { try file.take.setBroadcastWave(chunk) } catch {
                Log.error("\(error.description) (the take is recorded without its time reference)")
            }
        }
    }

    /// Reserves the disk space of every file through take frame `target`; false, with the
    /// error set, if a file system is full. Space is taken eight seconds ahead (one `fallocate`
    /// per file every eight seconds, not per write: at 64 tracks, every two seconds cost the
    /// writer 6 % of its time, issue #29) while the file systems have room for four times
    /// that; nearer full, just what the frames need, so a nearly full disk still takes every
    /// frame it can hold and every track stops on the same one. Never past `limit` (the take's
    /// known end, or the frames of the last flush): space the take cannot use would only be
    /// allocated to be given back at close.
    private func reserve(through target: Int64, limit: Int64?) -> Bool {
        guard target > reserved else { return true }
        let ahead = min(Int64(8 * rate), max(0, (limit ?? .max) - target))
        let roomy = ahead > 0 && files.allSatisfy { file in
            (file.take.freeBytes ?? 0) > Int64(4 * files.count * file.take.byteCount(frames: Int(target - written + ahead)))
        }
        let frames = roomy ? target - written + ahead : target - written
        // Through the limit (the take's known end, or a final flush's frames): the files' last
        // frames, reserved exactly, so that nothing is left past their ends to give back at close.
        let last = limit.map { written + frames >= $0 } ?? false
        for file in files {
            do { try file.take.reserve(frames: Int(frames), last: last) } catch {
                fail(error)
                return false
            }
        }
        reserved = written + frames
        return true
    }

    /// Calls `body` for each run of track `channel`'s queue frames [from, to): its samples in a
    /// held buffer's plane, or nil for frames to write as silence (lost, or muted).
    private func forEachRun(channel: Int, from: Int64, to: Int64, _ body: (UnsafeRawPointer?, Int) -> Void) {
        let muted = mutes.withLock { $0 }.filter { $0.channels.contains(channel) && $0.frames.overlaps(from..<to) }
            .map(\.frames).sorted { $0.lowerBound < $1.lowerBound }
        var position = from
        for range in muted where range.upperBound > position {
            let start = max(range.lowerBound, position), stop = min(range.upperBound, to)
            if start > position { forEachHeldRun(channel: channel, from: position, to: start, body) }
            body(nil, Int(stop - start))
            position = stop
        }
        if position < to { forEachHeldRun(channel: channel, from: position, to: to, body) }
    }

    /// `forEachRun` without the muted frames.
    private func forEachHeldRun(channel: Int, from: Int64, to: Int64, _ body: (UnsafeRawPointer?, Int) -> Void) {
        let size = format.bytesPerSample
        var position = from
        var i = 0
        while position < to {
            while i < held.count && held[i].end <= position { i += 1 }
            guard i < held.count else {
                body(nil, Int(to - position))
                return
            }
            let buffer = held[i]
            if buffer.queueFrame > position {
                let gap = min(buffer.queueFrame, to) - position
                body(nil, Int(gap))
                position += gap
                continue
            }
            let count = Int(min(buffer.end, to) - position)
            let plane = UnsafeRawPointer(buffer.buffer.pointee.mAudioData) + channel * buffer.frames * size
            body(plane + Int(position - buffer.queueFrame) * size, count)
            position += Int64(count)
        }
    }

    /// Writes take frames [from, to) of one file: a track's plane slices as they are, or
    /// (several tracks in one file) interleaved through the scratch buffer.
    private func writeFile(_ file: TakeFile, from: Int64, to: Int64, takeStart: Int64) {
        let size = format.bytesPerSample
        if file.channels.count == 1 {
            let channel = file.channels[0]
            let start = takeStart + skip[channel] + from
            forEachRun(channel: channel, from: start, to: start + (to - from)) { samples, count in
                guard state.withLock({ $0.error }) == nil else { return }
                if let samples {
                    let bytes = UnsafeRawBufferPointer(start: samples, count: count * size)
                    countClips(bytes)
                    write(bytes, frames: count, to: file)
                } else {
                    writeSilence(frames: count, to: file)
                }
            }
            return
        }
        let width = file.channels.count
        var first = from
        while first < to, state.withLock({ $0.error }) == nil {
            let count = Int(min(to - first, Int64(Self.scratchFrames)))
            let destination = scratch.baseAddress!
            // An encoded file takes its channels as planes (its encoder's layout); others interleaved.
            let planar = file.take.takesPlanes
            for (slot, channel) in file.channels.enumerated() {
                let start = takeStart + skip[channel] + first
                var offset = 0
                forEachRun(channel: channel, from: start, to: start + Int64(count)) { samples, run in
                    Self.spread(samples, count: run, size: size,
                                into: destination + (planar ? slot * count + offset : offset * width + slot) * size,
                                stride: planar ? size : width * size)
                    offset += run
                }
            }
            let bytes = UnsafeRawBufferPointer(start: destination, count: count * width * size)
            countClips(bytes)
            if planar {
                do { try file.take.write(planes: bytes, frames: count) } catch { fail(error) }
            } else {
                write(bytes, frames: count, to: file)
            }
            first += Int64(count)
        }
    }

    /// Copies `count` samples of `size` bytes (zeros if `samples` is nil) to every `stride` bytes
    /// from `destination`: one channel's slot of interleaved frames.
    private static func spread(_ samples: UnsafeRawPointer?, count: Int, size: Int, into destination: UnsafeMutableRawPointer,
                               stride: Int) {
        switch (size, samples) {
        case (4, let samples?):
            for t in 0..<count { (destination + t &* stride).storeBytes(of: samples.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self), as: UInt32.self) }
        case (2, let samples?):
            for t in 0..<count { (destination + t &* stride).storeBytes(of: samples.loadUnaligned(fromByteOffset: t &* 2, as: UInt16.self), as: UInt16.self) }
        case (_, let samples?):
            for t in 0..<count { (destination + t &* stride).copyMemory(from: samples + t &* size, byteCount: size) }
        case (_, nil):
            for t in 0..<count { (destination + t &* stride).initializeMemory(as: UInt8.self, repeating: 0, count: size) }
        }
    }

    private func writeSilence(frames: Int, to file: TakeFile) {
        let frameBytes = file.channels.count * format.bytesPerSample
        var left = frames
        while left > 0, state.withLock({ $0.error }) == nil {
            let count = min(left, zeros.count / frameBytes)
            write(UnsafeRawBufferPointer(start: zeros.baseAddress, count: count * frameBytes), frames: count, to: file)
            left -= count
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, frames: Int, to file: TakeFile) {
        do { try file.take.write(bytes, frames: frames) } catch { fail(error) }
    }

    func fail(_ error: AudioTakeFileError) {
        state.withLock { if $0.error == nil { $0.error = error.description } }
        mainLoopWake.post()
    }
}
