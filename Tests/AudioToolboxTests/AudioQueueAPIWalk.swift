import Foundation
import Glibc
import Synchronization
import AudioToolbox
import QueueCore

/// A model-based random walk over the public Audio Queue API: creates, allocates, enqueues,
/// starts, pauses, stops, flushes, resets and disposes of several queues, with NULLs, wrong
/// sizes, NaN/±inf/far-off values, buffers of other queues, freed buffers and unreadable
/// memory, and calls from inside callbacks. Each result is checked against what Apple's
/// reference allows in the state the model knows; callbacks are checked to get each enqueued
/// buffer back exactly once, never a freed or foreign one, never after Dispose returned.
///
/// The calls come from the seed (SplitMix64), so a failure replays with
/// `JAQ_API_WALK_SEED=<seed> JAQ_API_WALK_CALLS=<n>`; only a queue that a callback disposed of
/// (at a moment the queue thread decides) can make a replay take another path. The report
/// prints the last calls made.
final class AudioQueueAPIWalk: @unchecked Sendable {
    /// What a queue's callback does with the buffer it gets.
    enum CallbackAction: Int, CaseIterable {
        case nothing, reenqueue, reset, stopNow, stopLater, freeBuffer, dispose
    }

    struct BufferRecord {
        let queue: UInt
        let capacity: UInt32
        var enqueued = 0
        var returned = 0
        var inCallback = 0
    }

    struct QueueRecord {
        let isOutput: Bool
        var action = CallbackAction.nothing
        /// Dispose(true) returned on the walk's thread: no callback or listener may run now.
        var disposed = false
        /// Its state can change without a walk call (Stop(false), a callback's action, Dispose(false)).
        var unsettled = false
    }

    struct Model {
        var queues: [UInt: QueueRecord] = [:]
        var buffers: [UInt: BufferRecord] = [:]
        var violations: [String] = []
        var callbacks = 0
    }

    let seed: UInt64
    /// The ManualDriver the walk runs cycles on; nil on a JACK server, whose cycles run by themselves.
    let driver: ManualDriver?
    /// The device the walk's queues open.
    let device: DeviceProvider
    private var random: UInt64
    /// Locked (pthread), not Mutex: ThreadSanitizer sees its locking.
    let model = Locked(Model())
    /// The walk's slots; a slot's queue may be live, disposed or nil.
    private var queueSlots: [AudioQueueRef?] = Array(repeating: nil, count: 4)
    /// Every buffer address the walk has seen (live, freed, of disposed queues).
    private var bufferSlots: [AudioQueueBufferRef] = []
    /// The buffers the walk allocated for each queue (and has not freed itself).
    private var ownBuffers: [UInt: [AudioQueueBufferRef]] = [:]
    /// Refs of queues disposed of (stale), kept to call with.
    private var staleQueues: [AudioQueueRef] = []
    private(set) var log: [String] = []
    /// How often each result code came back (the walk's coverage, printed by the tests).
    private(set) var results: [OSStatus: Int] = [:]
    private let unreadable: UnsafeMutableRawPointer

    init(seed: UInt64, driver: ManualDriver?, device: DeviceProvider) {
        self.seed = seed
        self.driver = driver
        self.device = device
        random = seed
        unreadable = mmap(nil, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
    }

    deinit { munmap(unreadable, 4096) }

    // MARK: The pseudo-random sequence (SplitMix64: the same on every machine)

    private func next() -> UInt64 {
        random &+= 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private func pick(_ count: Int) -> Int { Int(next() % UInt64(count)) }
    private func chance(_ percent: Int) -> Bool { pick(100) < percent }
    private func pick<T>(_ values: [T]) -> T { values[pick(values.count)] }

    // MARK: Checking

    private func violate(_ message: String) {
        model.withLock { $0.violations.append(message) }
    }

    /// Runs `call` (named `name` in the log), times it and checks its result is one of `allowed`.
    @discardableResult
    private func check(_ name: String, _ allowed: Set<OSStatus>, on queue: QueueRecord? = nil,
                       _ call: () -> OSStatus) -> OSStatus {
        var allowed = allowed
        // A queue that may stop, reset or dispose of itself by now may refuse anything so.
        if queue?.unsettled == true {
            allowed.formUnion([kAudio_ParamError, kAudioQueueErr_DisposalPending, kAudioQueueErr_EnqueueDuringReset])
        }
        log.append(name)
        let start = HostClock.nanoseconds()
        let status = call()
        let seconds = Double(HostClock.nanoseconds() - start) / 1e9
        if !allowed.contains(status) {
            violate("\(name) returned \(status), expected one of \(allowed.sorted())")
        }
        if seconds > 3 { violate("\(name) took \(seconds) s") }
        results[status, default: 0] += 1
        return status
    }

    private func address(_ queue: AudioQueueRef) -> UInt { UInt(bitPattern: UnsafeRawPointer(queue)) }
    private func address(_ buffer: AudioQueueBufferRef) -> UInt { UInt(bitPattern: buffer) }

    /// The live queue record for `queue`, if the walk made it and it was not disposed of.
    private func record(_ queue: AudioQueueRef?) -> QueueRecord? {
        guard let queue else { return nil }
        return model.withLock { model in model.queues[address(queue)].flatMap { $0.disposed ? nil : $0 } }
    }

    // MARK: Callbacks (any thread the queue calls on)

    fileprivate func callbackEntered(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) -> CallbackAction {
        model.withLock { model in
            let q = address(queue), b = address(buffer)
            guard let record = model.queues[q] else {
                model.violations.append("callback of a queue the walk does not know: \(q)")
                return .nothing
            }
            if record.disposed { model.violations.append("callback of queue \(q) after Dispose returned") }
            guard var buffer = model.buffers[b] else {
                model.violations.append("callback of queue \(q) got buffer \(b), which is freed or unknown")
                return .nothing
            }
            if buffer.queue != q { model.violations.append("callback of queue \(q) got buffer \(b) of queue \(buffer.queue)") }
            if buffer.returned >= buffer.enqueued {
                model.violations.append("buffer \(b) came back more often (\(buffer.returned + 1)) than it was enqueued (\(buffer.enqueued))")
            }
            buffer.returned += 1
            buffer.inCallback += 1
            model.callbacks += 1
            model.buffers[b] = buffer
            return record.action
        }
    }

    fileprivate func callback(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef, isOutput: Bool) {
        let action = callbackEntered(queue, buffer)
        let b = address(buffer)
        var freed = false
        let reset: OSStatus = kAudioQueueErr_EnqueueDuringReset, pending = kAudioQueueErr_DisposalPending
        switch action {
        case .nothing:
            break
        case .reenqueue:
            if isOutput { buffer.pointee.mAudioDataByteSize = buffer.pointee.mAudioDataBytesCapacity / 4 * 4 }
            let empty = isOutput && buffer.pointee.mAudioDataByteSize == 0
            enqueueCounted(b) {
                let status = C.enqueueBuffer(queue, buffer, 0, nil)
                let allowed: Set<OSStatus> = empty ? [kAudioQueueErr_BufferEmpty, reset, pending]
                    : [noErr, reset, pending, kAudio_ParamError, kAudioQueueErr_BufferInQueue]
                if !allowed.contains(status) { violate("callback: EnqueueBuffer returned \(status)") }
                return status
            }
        case .reset:
            let status = C.reset(queue)
            if ![noErr, pending, kAudio_ParamError].contains(status) { violate("callback: Reset returned \(status)") }
        case .stopNow, .stopLater:
            let status = C.stop(queue, action == .stopNow)
            if ![noErr, pending, kAudio_ParamError].contains(status) { violate("callback: Stop returned \(status)") }
        case .freeBuffer:
            let status = C.freeBuffer(queue, buffer)
            if ![noErr, pending, kAudio_ParamError].contains(status) { violate("callback: FreeBuffer of its own buffer returned \(status)") }
            if status == noErr {
                freed = true
                model.withLock { _ = $0.buffers.removeValue(forKey: b) }
            }
        case .dispose:
            let status = C.dispose(queue, true)
            if ![noErr, kAudio_ParamError].contains(status) { violate("callback: Dispose returned \(status)") }
            forgetQueue(address(queue))
        }
        if !freed { model.withLock { model in model.buffers[b]?.inCallback -= 1 } }
    }

    /// Counts an enqueue before it is made (the buffer may come back before the call returns).
    private func enqueueCounted(_ b: UInt, _ call: () -> OSStatus) {
        model.withLock { model in model.buffers[b]?.enqueued += 1 }
        if call() != noErr { model.withLock { model in model.buffers[b]?.enqueued -= 1 } }
    }

    /// A queue is gone: its buffers were freed with it.
    private func forgetQueue(_ q: UInt) {
        model.withLock { model in
            model.queues[q]?.disposed = true
            model.buffers = model.buffers.filter { $0.value.queue != q }
        }
    }

    fileprivate func listenerCalled(_ queue: AudioQueueRef) {
        let disposed = model.withLock { $0.queues[address(queue)]?.disposed ?? true }
        if disposed { violate("IsRunning listener of queue \(address(queue)) after Dispose returned") }
    }

    // MARK: The walk

    /// Makes `calls` calls; returns the violations (empty if every result was as allowed).
    func run(calls: Int) -> [String] {
        while log.count < calls {
            step()
            if !model.withLock({ $0.violations.isEmpty }) { break }
        }
        for case let queue? in queueSlots where record(queue) != nil {
            check("final Dispose(\(address(queue)), true)", [noErr, kAudio_ParamError]) { C.dispose(queue, true) }
            forgetQueue(address(queue))
        }
        // Let queue threads finish what they were doing; nothing may run for a disposed queue.
        usleep(20_000)
        return model.withLock { $0.violations }
    }

    /// The failure report: the seed, how to replay, and the last calls.
    func report(_ violations: [String]) -> String {
        """
        API walk failed after \(log.count) calls, seed \(seed) \
        (replay: JAQ_API_WALK_SEED=\(seed) JAQ_API_WALK_CALLS=\(log.count)):
        \(violations.prefix(5).joined(separator: "\n"))
        last calls:
        \(log.suffix(40).enumerated().map { "  \(log.count - min(40, log.count) + $0.offset): \($0.element)" }.joined(separator: "\n"))
        """
    }

    private func step() {
        let slot = pick(queueSlots.count)
        switch pick(100) {
        case 0..<3: create(slot: slot)
        case 3..<13: allocate(slot: slot)
        case 13..<18: free(slot: slot)
        case 18..<36: enqueue(slot: slot, withParameters: false)
        case 36..<42: enqueue(slot: slot, withParameters: true)
        case 42..<50: start(slot: slot)
        case 50..<56: runControl(slot: slot)
        case 56..<66: advance()
        case 66..<70: setAction(slot: slot)
        case 70..<75: parameters(slot: slot)
        case 75..<80: times(slot: slot)
        case 80..<83: properties(slot: slot)
        case 83..<85: dispose(slot: slot)
        case 85..<89: nullCalls()
        case 89..<92: staleCalls()
        default: runControl(slot: slot)
        }
    }

    private let format16 = lpcm(rate: 48000, channels: 2, bits: 16)

    private func create(slot: Int) {
        if let old = queueSlots[slot], let rec = record(old) {
            check("Dispose(\(address(old)), true) before reusing slot \(slot)", [noErr], on: rec) { C.dispose(old, true) }
            forgetQueue(address(old))
            staleQueues.append(old)
        }
        queueSlots[slot] = nil
        let isOutput = chance(60)
        let user = Unmanaged.passUnretained(self).toOpaque()
        var format = format16
        if chance(5) {
            // NULL format, NULL callback, NULL outAQ: -50 and no queue.
            var queue: AudioQueueRef?
            check("NewOutput(NULL format)", [kAudio_ParamError]) { C.newOutput(nil, walkOutputCallback, user, nil, nil, 0, &queue) }
            check("NewInput(NULL outAQ)", [kAudio_ParamError]) { C.newInput(&format, walkInputCallback, user, nil, nil, 0, nil) }
            check("NewOutput(NULL callback)", [kAudio_ParamError]) { C.newOutput(&format, nil, user, nil, nil, 0, &queue) }
            return
        }
        var queue: AudioQueueRef?
        let status = check("New\(isOutput ? "Output" : "Input") into slot \(slot)", [noErr]) {
            isOutput ? AudioQueueNewOutput(&format, walkOutputCallback, user, nil, nil, 0, &queue, device: device)
                : AudioQueueNewInput(&format, walkInputCallback, user, nil, nil, 0, &queue, device: device)
        }
        guard status == noErr, let queue else { return }
        // A new queue may have a disposed one's address.
        staleQueues.removeAll { $0 == queue }
        model.withLock { model in
            let q = address(queue)
            model.queues[q] = QueueRecord(isOutput: isOutput)
            // Buffers of a disposed queue that had this address are gone.
            model.buffers = model.buffers.filter { $0.value.queue != q }
        }
        queueSlots[slot] = queue
        check("AddPropertyListener(IsRunning)", [noErr]) {
            C.addPropertyListener(queue, kAudioQueueProperty_IsRunning, walkListener, user)
        }
    }

    private func allocate(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let size: UInt32 = pick([0, 1, 3, 4, 256, 1024, 1024, 4096, 4096, 4096, 19200, 19200, 0x7FFF_FFF0, .max])
        let descriptions: UInt32 = chance(80) ? 0 : pick([1, 16, 0x1000_0000])
        if chance(5) {
            check("AllocateBuffer(\(address(queue)), NULL out)", [kAudio_ParamError]) { C.allocateBuffer(queue, size, nil) }
            return
        }
        let huge = size >= 0x7FFF_FFF0 || descriptions >= 0x1000_0000
        var allowed: Set<OSStatus> = huge ? [kAudio_ParamError] : [noErr]
        if rec.unsettled { allowed.formUnion([kAudioQueueErr_DisposalPending, kAudio_ParamError]) }
        var buffer: AudioQueueBufferRef?
        let status = check("AllocateBuffer(\(address(queue)), \(size), \(descriptions) descriptions)", allowed, on: rec) {
            C.allocateBufferWithPacketDescriptions(queue, size, descriptions, &buffer)
        }
        guard status == noErr, let buffer else {
            if buffer != nil { violate("AllocateBuffer failed but returned a buffer") }
            return
        }
        if buffer.pointee.mAudioDataBytesCapacity != size || buffer.pointee.mAudioDataByteSize != 0 {
            violate("AllocateBuffer(\(size)) gave capacity \(buffer.pointee.mAudioDataBytesCapacity)")
        }
        model.withLock { $0.buffers[address(buffer)] = BufferRecord(queue: address(queue), capacity: size) }
        bufferSlots.removeAll { $0 == buffer }
        bufferSlots.append(buffer)
        ownBuffers[address(queue), default: []].append(buffer)
        if bufferSlots.count > 64 { bufferSlots.removeFirst() }
    }

    /// A buffer argument: mostly one of `queue`'s own, else one the walk has seen (freed,
    /// another queue's), NULL, or unreadable memory.
    private func bufferArgument(for queue: AudioQueueRef) -> (AudioQueueBufferRef?, String) {
        let own = ownBuffers[address(queue)] ?? []
        switch pick(20) {
        case 0: return (nil, "NULL")
        case 1: return (unreadable.assumingMemoryBound(to: AudioQueueBuffer.self), "unreadable")
        case 2..<15 where !own.isEmpty:
            let buffer = own[pick(own.count)]
            return (buffer, "\(address(buffer))")
        default:
            guard !bufferSlots.isEmpty else { return (nil, "NULL") }
            let buffer = bufferSlots[pick(bufferSlots.count)]
            return (buffer, "\(address(buffer))")
        }
    }

    private func free(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let (buffer, name) = bufferArgument(for: queue)
        let q = address(queue)
        let known = buffer.flatMap { b in model.withLock { $0.buffers[address(b)] } }
        var allowed: Set<OSStatus>
        if buffer == nil {
            allowed = [kAudio_ParamError]
        } else if let known, known.queue == q {
            let held = known.enqueued > known.returned || known.inCallback > 0
            allowed = held ? [kAudioQueueErr_BufferInQueue, noErr] : [noErr]
        } else {
            allowed = [kAudioQueueErr_InvalidBuffer]
        }
        if rec.unsettled { allowed.formUnion([kAudioQueueErr_DisposalPending, kAudioQueueErr_BufferInQueue, noErr]) }
        let status = check("FreeBuffer(\(q), \(name))", allowed, on: rec) { C.freeBuffer(queue, buffer) }
        if status == noErr, let buffer {
            ownBuffers[q]?.removeAll { $0 == buffer }
            model.withLock { model in
                let b = address(buffer)
                if let record = model.buffers[b], record.enqueued > record.returned || record.inCallback > 0 {
                    model.violations.append("FreeBuffer freed buffer \(b) while it was enqueued or in its callback")
                }
                model.buffers[b] = nil
            }
        }
    }

    private func enqueue(slot: Int, withParameters: Bool) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let (buffer, name) = bufferArgument(for: queue)
        let q = address(queue)
        let known = buffer.flatMap { b in model.withLock { $0.buffers[address(b)] } }
        let own = known.map { $0.queue == q } ?? false
        var bytes: UInt32 = 0
        // Writes only to a buffer that is certainly alive: not one a callback may free, nor
        // one a Dispose(false) or a callback's Dispose may have freed with its queue by now.
        let writable = !rec.unsettled && rec.action != .freeBuffer
        if let buffer, let known, own, writable {
            let capacity = known.capacity
            bytes = pick([0, capacity / 4 * 4, capacity / 4 * 4, capacity / 4 * 4, capacity / 8 * 4, capacity &+ 4, 3, capacity])
            buffer.pointee.mAudioDataByteSize = bytes
        }
        let capacity = known?.capacity ?? 0
        var allowed: Set<OSStatus>
        if !own || buffer == nil {
            allowed = [kAudioQueueErr_InvalidBuffer]
        } else if !writable {
            allowed = [noErr, kAudioQueueErr_InvalidBuffer, kAudioQueueErr_BufferEnqueuedTwice, kAudioQueueErr_BufferEmpty, kAudio_ParamError]
        } else if known!.enqueued > known!.returned || known!.inCallback > 0 {
            allowed = [kAudioQueueErr_BufferEnqueuedTwice, noErr, kAudioQueueErr_BufferEmpty, kAudio_ParamError]
        } else if rec.isOutput && bytes == 0 {
            allowed = [kAudioQueueErr_BufferEmpty]
        } else if rec.isOutput && bytes > capacity {
            allowed = [kAudio_ParamError]
        } else if rec.isOutput && bytes < 4 {
            allowed = [kAudioQueueErr_BufferEmpty]
        } else if !rec.isOutput && capacity < 4 {
            allowed = [kAudio_ParamError]
        } else {
            allowed = [noErr]
        }
        // Refused first while a Reset, Stop or Dispose is returning buffers.
        allowed.insert(kAudioQueueErr_EnqueueDuringReset)
        if rec.unsettled { allowed.formUnion([kAudioQueueErr_DisposalPending]) }
        let b = buffer.map(address) ?? 0
        if !withParameters {
            enqueueCounted(b) {
                check("EnqueueBuffer(\(q), \(name), \(bytes) bytes)", allowed, on: rec) { C.enqueueBuffer(queue, buffer, 0, nil) }
            }
            return
        }
        // With parameters: output queues only; start times, trims and parameter events.
        var time = AudioTimeStamp()
        let times: [Double] = [0, 100, 48000, -1, .nan, .infinity, 1e300, -1e300, 1e19, -0x1p63, 0x1p52, 0x1p53]
        let timeValue = pick(times)
        time.mSampleTime = timeValue
        time.mFlags = chance(85) ? .sampleTimeValid : .hostTimeValid
        let useTime = chance(50)
        let trimStart: UInt32 = pick([0, 0, 1, 100, 0x7FFF_FFFF])
        let trimEnd: UInt32 = pick([0, 0, 1, 100, .max])
        var events = (0..<3).map { _ in
            AudioQueueParameterEvent(mID: pick([kAudioQueueParam_Volume, kAudioQueueParam_Pan, 99, kAudioQueueParam_PlayRate]),
                                     mValue: pick([0, 0.5, 1, -1, 2]))
        }
        let eventCount: UInt32 = pick([0, 0, 1, 1, 3])
        let eventsNull = eventCount > 0 && chance(20)
        // The first check that fails decides: events (-50, InvalidParameter), the start time
        // (-50), then the buffer as for EnqueueBuffer, then the trims (-50).
        var codes = allowed.union([kAudio_ParamError, kAudioQueueErr_InvalidParameter])
        let badTime = useTime && (time.mFlags != .sampleTimeValid || !timeValue.isFinite || timeValue < 0 || timeValue > 0x1p52)
        if badTime && buffer != nil { codes = [kAudio_ParamError, kAudioQueueErr_InvalidParameter] }
        // The events come first: the first that is wrong decides (a parameter the queue does not
        // schedule: InvalidParameter; PlayRate outside Apple's 0.5...2: -50, as SetParameter).
        if buffer != nil && eventCount > 0 && !eventsNull {
            let wrong = events[0..<Int(eventCount)].first { $0.mID == 99 || ($0.mID == kAudioQueueParam_PlayRate && !(0.5...2).contains($0.mValue)) }
            if let wrong { codes = [wrong.mID == 99 ? kAudioQueueErr_InvalidParameter : kAudio_ParamError] }
        }
        if !rec.isOutput { codes = [kAudioQueueErr_InvalidQueueType] }
        var actual = AudioTimeStamp()
        let description = "EnqueueBufferWithParameters(\(q), \(name), \(bytes) bytes, trims \(trimStart)/\(trimEnd), "
            + "\(eventCount) events\(eventsNull ? " NULL" : "") id \(events[0].mID), start \(useTime ? "\(timeValue) flags \(time.mFlags.rawValue)" : "NULL"))"
        enqueueCounted(b) {
            events.withUnsafeMutableBufferPointer { eventPointer in
                withUnsafePointer(to: &time) { timePointer in
                    check(description, codes, on: rec) {
                        C.enqueueBufferWithParameters(
                            queue, buffer, 0, nil, trimStart, trimEnd, eventCount,
                            eventsNull ? nil : eventPointer.baseAddress, useTime ? timePointer : nil, &actual)
                    }
                }
            }
        }
    }

    /// A start time argument: NULL, near, far-off, NaN, host time.
    private func timeArgument() -> (AudioTimeStamp?, Bool, String) {
        let now = driver?.frameTime ?? 0
        var time = AudioTimeStamp()
        switch pick(10) {
        case 0, 1, 2: return (nil, false, "NULL")
        case 3:
            time.mSampleTime = Double(now + Int64(pick(4096)))
            time.mFlags = .sampleTimeValid
            return (time, false, "now+")
        case 4:
            time.mHostTime = pick([0, 1_000_000_000, .max])
            time.mFlags = .hostTimeValid
            return (time, false, "host \(time.mHostTime)")
        case 5:
            time.mFlags = []
            return (time, false, "no flags")
        default:
            let value = pick([Double.nan, .infinity, -.infinity, 1e300, -1e300, 1e19, -1e19, -0x1p63, 0x1p63, 0x1p60])
            time.mSampleTime = value
            time.mFlags = .sampleTimeValid
            return (time, true, "\(value)")
        }
    }

    private func start(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        var (time, bad, name) = timeArgument()
        var allowed: Set<OSStatus> = bad ? [kAudio_ParamError] : [noErr]
        if rec.unsettled { allowed.formUnion([kAudioQueueErr_DisposalPending, kAudio_ParamError, noErr]) }
        check("Start(\(address(queue)), \(name))", allowed, on: rec) {
            if time == nil { return C.start(queue, nil) }
            return C.start(queue, &time!)
        }
    }

    private func runControl(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let q = address(queue)
        var allowed: Set<OSStatus> = [noErr]
        if rec.unsettled { allowed.insert(kAudioQueueErr_DisposalPending) }
        switch pick(7) {
        case 0: check("Pause(\(q))", allowed, on: rec) { C.pause(queue) }
        case 1: check("Stop(\(q), true)", allowed, on: rec) { C.stop(queue, true) }
        case 2:
            check("Stop(\(q), false)", allowed, on: rec) { C.stop(queue, false) }
            model.withLock { $0.queues[q]?.unsettled = true }
        case 3: check("Flush(\(q))", allowed, on: rec) { C.flush(queue) }
        case 4: check("Reset(\(q))", allowed, on: rec) { C.reset(queue) }
        default:
            let frames: UInt32 = pick([0, 1, 512, 48000, .max])
            var prepared: UInt32 = 0
            var codes = rec.isOutput ? allowed : [kAudioQueueErr_InvalidQueueType]
            if rec.isOutput { codes.insert(kAudioQueueErr_PrimeTimedOut) }
            let report = chance(50)
            check("Prime(\(q), \(frames))", codes, on: rec) {
                report ? C.prime(queue, frames, &prepared) : C.prime(queue, frames, nil)
            }
        }
    }

    private func advance() {
        let cycles = pick([1, 2, 4, 16, 64])
        log.append("advance \(cycles) cycles")
        if let driver { driver.run(cycles: cycles) } else { usleep(UInt32(cycles) * 1000) }
    }

    private func setAction(slot: Int) {
        guard let queue = queueSlots[slot], record(queue) != nil else { return }
        let action = CallbackAction.allCases[pick(CallbackAction.allCases.count)]
        log.append("callbacks of \(address(queue)) now \(action)")
        model.withLock { model in
            model.queues[address(queue)]?.action = action
            // From now on the queue may stop, reset or dispose of itself at any time.
            if action != .nothing && action != .reenqueue { model.queues[address(queue)]?.unsettled = true }
        }
    }

    private func parameters(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let q = address(queue)
        let id = pick([kAudioQueueParam_Volume, kAudioQueueParam_Pan, kAudioQueueParam_VolumeRampTime, kAudioQueueParam_PlayRate,
                       kAudioQueueParam_Pitch, 0, 77])
        let value = pick([Float(0), 0.5, 1, -1, 2, 1e15, .greatestFiniteMagnitude, .nan, .infinity, -.infinity])
        let known = [kAudioQueueParam_Volume, kAudioQueueParam_Pan, kAudioQueueParam_VolumeRampTime, kAudioQueueParam_PlayRate,
                     kAudioQueueParam_Pitch].contains(id)
        var set: Set<OSStatus>
        if !rec.isOutput { set = [kAudioQueueErr_InvalidQueueType] }
        else if !value.isFinite { set = [kAudio_ParamError] }
        else if id == kAudioQueueParam_VolumeRampTime && value > 86_400 { set = [kAudio_ParamError] }  // over a day
        // PlayRate 0.5...2 and Pitch ±2400 cents (Apple's ranges): outside, as for a buffer's events.
        else if id == kAudioQueueParam_PlayRate && !(0.5...2).contains(value) { set = [kAudio_ParamError] }
        else if id == kAudioQueueParam_Pitch && !(-2400...2400).contains(value) { set = [kAudio_ParamError] }
        else { set = known ? [noErr] : [kAudioQueueErr_InvalidParameter] }
        check("SetParameter(\(q), \(id), \(value))", set, on: rec) { C.setParameter(queue, id, value) }
        var read: Float = .nan
        let get: Set<OSStatus> = !rec.isOutput ? [kAudioQueueErr_InvalidQueueType] : known ? [noErr] : [kAudioQueueErr_InvalidParameter]
        let status = check("GetParameter(\(q), \(id))", get, on: rec) { C.getParameter(queue, id, &read) }
        if status == noErr && !read.isFinite { violate("GetParameter(\(id)) gave \(read)") }
        if chance(10) {
            check("GetParameter(\(q), NULL)", [kAudio_ParamError, kAudioQueueErr_InvalidQueueType]) { C.getParameter(queue, id, nil) }
        }
    }

    private func times(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let q = address(queue)
        var (time, bad, name) = timeArgument()
        var out = AudioTimeStamp()
        var extra: Set<OSStatus> = rec.unsettled ? [kAudioQueueErr_DisposalPending] : []
        switch pick(4) {
        case 0:
            var discontinuity: UInt8 = 0
            check("GetCurrentTime(\(q))", [noErr], on: rec) { C.getCurrentTime(queue, nil, &out, &discontinuity) }
            // Negative before a scheduled start (Docs/timing.md), but never past what a frame time can be.
            if !out.mSampleTime.isFinite || abs(out.mSampleTime) > 0x1p52 { violate("GetCurrentTime gave \(out.mSampleTime)") }
        case 1:
            check("DeviceGetCurrentTime(\(q))", [noErr], on: rec) { C.deviceGetCurrentTime(queue, &out) }
        case 2:
            let noTime = time == nil || time!.mFlags.isEmpty
            let allowed: Set<OSStatus> = bad || noTime ? [kAudio_ParamError] : [noErr]
            check("DeviceTranslateTime(\(q), \(name))", allowed, on: rec) {
                if time == nil { return C.deviceTranslateTime(queue, nil, &out) }
                return C.deviceTranslateTime(queue, &time!, &out)
            }
        default:
            extra.insert(kAudioQueueErr_InvalidRunState)
            let allowed: Set<OSStatus> = time == nil ? [kAudio_ParamError] : bad ? [kAudio_ParamError] : extra.union([noErr])
            check("DeviceGetNearestStartTime(\(q), \(name))", allowed, on: rec) {
                if time == nil { return C.deviceGetNearestStartTime(queue, nil, 0) }
                return C.deviceGetNearestStartTime(queue, &time!, 0)
            }
        }
    }

    private func properties(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let q = address(queue)
        var value: UInt32 = 7
        var size: UInt32 = pick([4, 4, 2, 0])
        let status = check("GetProperty(\(q), IsRunning, size \(size))", size >= 4 ? [noErr] : [kAudioQueueErr_InvalidPropertySize], on: rec) {
            C.getProperty(queue, kAudioQueueProperty_IsRunning, &value, &size)
        }
        if status == noErr && value > 1 { violate("IsRunning is \(value)") }
        var on: UInt32 = pick([0, 1])
        check("SetProperty(\(q), EnableLevelMetering, \(on))", [noErr], on: rec) {
            C.setProperty(queue, kAudioQueueProperty_EnableLevelMetering, &on, 4)
        }
    }

    private func dispose(slot: Int) {
        guard let queue = queueSlots[slot], let rec = record(queue) else { return }
        let q = address(queue)
        if chance(50) {
            check("Dispose(\(q), true)", [noErr], on: rec) { C.dispose(queue, true) }
            forgetQueue(q)
            staleQueues.append(queue)
            queueSlots[slot] = nil
        } else {
            // Disposed of once it has played out: the walk leaves it alone from now on (its
            // slot is reused, which disposes of it at once if it is still there).
            check("Dispose(\(q), false)", [noErr], on: rec) { C.dispose(queue, false) }
            model.withLock { $0.queues[q]?.unsettled = true }
        }
    }

    private func nullCalls() {
        var time = AudioTimeStamp()
        var value: Float = 0
        switch pick(8) {
        case 0: check("Start(NULL)", [kAudio_ParamError]) { C.start(nil, nil) }
        case 1: check("Dispose(NULL)", [kAudio_ParamError]) { C.dispose(nil, true) }
        case 2: check("EnqueueBuffer(NULL)", [kAudio_ParamError]) { C.enqueueBuffer(nil, nil, 0, nil) }
        case 3: check("FreeBuffer(NULL)", [kAudio_ParamError]) { C.freeBuffer(nil, nil) }
        case 4: check("Reset(NULL)", [kAudio_ParamError]) { C.reset(nil) }
        case 5: check("GetParameter(NULL)", [kAudio_ParamError]) { C.getParameter(nil, kAudioQueueParam_Volume, &value) }
        case 6: check("DeviceGetCurrentTime(NULL)", [kAudio_ParamError]) { C.deviceGetCurrentTime(nil, &time) }
        default: check("Flush(NULL)", [kAudio_ParamError]) { C.flush(nil) }
        }
    }

    private func staleCalls() {
        guard !staleQueues.isEmpty else { return }
        let queue = staleQueues[pick(staleQueues.count)]
        // A live queue may have been given the same address since: not stale then.
        if record(queue) != nil { return }
        let q = address(queue)
        var buffer: AudioQueueBufferRef?
        switch pick(5) {
        case 0: check("Start(stale \(q))", [kAudio_ParamError]) { C.start(queue, nil) }
        case 1: check("AllocateBuffer(stale \(q))", [kAudio_ParamError]) { C.allocateBuffer(queue, 64, &buffer) }
        case 2: check("Stop(stale \(q))", [kAudio_ParamError]) { C.stop(queue, true) }
        case 3: check("Dispose(stale \(q))", [kAudio_ParamError]) { C.dispose(queue, false) }
        default: check("Flush(stale \(q))", [kAudio_ParamError]) { C.flush(queue) }
        }
    }
}

private func walk(_ user: UnsafeMutableRawPointer?) -> AudioQueueAPIWalk {
    Unmanaged<AudioQueueAPIWalk>.fromOpaque(user!).takeUnretainedValue()
}

private func walkOutputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    walk(user).callback(queue, buffer, isOutput: true)
}

private func walkInputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                               _ time: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                               _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    walk(user).callback(queue, buffer, isOutput: false)
}

private func walkListener(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ id: AudioQueuePropertyID) {
    walk(user).listenerCalled(queue)
}

/// The API as a C caller sees it: every pointer may be NULL (the Swift import of the header
/// says which are nonnull, and C callers need not listen). Same functions, same ABI.
enum C {
    typealias Queue = AudioQueueRef?
    typealias Buffer = AudioQueueBufferRef?
    private static func c<F, G>(_ function: F, _ type: G.Type) -> G { unsafeBitCast(function, to: type) }

    static let newOutput = c(
        AudioQueueNewOutput as @convention(c) (UnsafePointer<AudioStreamBasicDescription>, AudioQueueOutputCallback,
                                               UnsafeMutableRawPointer?, CFRunLoop?, CFString?, UInt32,
                                               UnsafeMutablePointer<AudioQueueRef?>) -> OSStatus,
        (@convention(c) (UnsafePointer<AudioStreamBasicDescription>?, AudioQueueOutputCallback?, UnsafeMutableRawPointer?,
                         CFRunLoop?, CFString?, UInt32, UnsafeMutablePointer<AudioQueueRef?>?) -> OSStatus).self)
    static let newInput = c(
        AudioQueueNewInput as @convention(c) (UnsafePointer<AudioStreamBasicDescription>, AudioQueueInputCallback,
                                              UnsafeMutableRawPointer?, CFRunLoop?, CFString?, UInt32,
                                              UnsafeMutablePointer<AudioQueueRef?>) -> OSStatus,
        (@convention(c) (UnsafePointer<AudioStreamBasicDescription>?, AudioQueueInputCallback?, UnsafeMutableRawPointer?,
                         CFRunLoop?, CFString?, UInt32, UnsafeMutablePointer<AudioQueueRef?>?) -> OSStatus).self)
    static let dispose = c(
        AudioQueueDispose as @convention(c) (AudioQueueRef, Bool) -> OSStatus,
        (@convention(c) (Queue, Bool) -> OSStatus).self)
    static let allocateBufferWithPacketDescriptions = c(
        AudioQueueAllocateBufferWithPacketDescriptions as @convention(c) (AudioQueueRef, UInt32, UInt32, UnsafeMutablePointer<AudioQueueBufferRef?>) -> OSStatus,
        (@convention(c) (Queue, UInt32, UInt32, UnsafeMutablePointer<AudioQueueBufferRef?>?) -> OSStatus).self)
    static let allocateBuffer = c(
        AudioQueueAllocateBuffer as @convention(c) (AudioQueueRef, UInt32, UnsafeMutablePointer<AudioQueueBufferRef?>) -> OSStatus,
        (@convention(c) (Queue, UInt32, UnsafeMutablePointer<AudioQueueBufferRef?>?) -> OSStatus).self)
    static let freeBuffer = c(
        AudioQueueFreeBuffer as @convention(c) (AudioQueueRef, AudioQueueBufferRef) -> OSStatus,
        (@convention(c) (Queue, Buffer) -> OSStatus).self)
    static let enqueueBuffer = c(
        AudioQueueEnqueueBuffer as @convention(c) (AudioQueueRef, AudioQueueBufferRef, UInt32, UnsafePointer<AudioStreamPacketDescription>?) -> OSStatus,
        (@convention(c) (Queue, Buffer, UInt32, UnsafePointer<AudioStreamPacketDescription>?) -> OSStatus).self)
    static let enqueueBufferWithParameters = c(
        AudioQueueEnqueueBufferWithParameters as @convention(c) (
            AudioQueueRef, AudioQueueBufferRef, UInt32, UnsafePointer<AudioStreamPacketDescription>?, UInt32, UInt32, UInt32,
            UnsafePointer<AudioQueueParameterEvent>?, UnsafePointer<AudioTimeStamp>?, UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus,
        (@convention(c) (
            Queue, Buffer, UInt32, UnsafePointer<AudioStreamPacketDescription>?, UInt32, UInt32, UInt32,
            UnsafePointer<AudioQueueParameterEvent>?, UnsafePointer<AudioTimeStamp>?, UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus).self)
    static let start = c(
        AudioQueueStart as @convention(c) (AudioQueueRef, UnsafePointer<AudioTimeStamp>?) -> OSStatus,
        (@convention(c) (Queue, UnsafePointer<AudioTimeStamp>?) -> OSStatus).self)
    static let prime = c(
        AudioQueuePrime as @convention(c) (AudioQueueRef, UInt32, UnsafeMutablePointer<UInt32>?) -> OSStatus,
        (@convention(c) (Queue, UInt32, UnsafeMutablePointer<UInt32>?) -> OSStatus).self)
    static let stop = c(
        AudioQueueStop as @convention(c) (AudioQueueRef, Bool) -> OSStatus, (@convention(c) (Queue, Bool) -> OSStatus).self)
    static let pause = c(
        AudioQueuePause as @convention(c) (AudioQueueRef) -> OSStatus, (@convention(c) (Queue) -> OSStatus).self)
    static let flush = c(
        AudioQueueFlush as @convention(c) (AudioQueueRef) -> OSStatus, (@convention(c) (Queue) -> OSStatus).self)
    static let reset = c(
        AudioQueueReset as @convention(c) (AudioQueueRef) -> OSStatus, (@convention(c) (Queue) -> OSStatus).self)
    static let getParameter = c(
        AudioQueueGetParameter as @convention(c) (AudioQueueRef, AudioQueueParameterID, UnsafeMutablePointer<Float>) -> OSStatus,
        (@convention(c) (Queue, AudioQueueParameterID, UnsafeMutablePointer<Float>?) -> OSStatus).self)
    static let setParameter = c(
        AudioQueueSetParameter as @convention(c) (AudioQueueRef, AudioQueueParameterID, Float) -> OSStatus,
        (@convention(c) (Queue, AudioQueueParameterID, Float) -> OSStatus).self)
    static let getProperty = c(
        AudioQueueGetProperty as @convention(c) (AudioQueueRef, AudioQueuePropertyID, UnsafeMutableRawPointer, UnsafeMutablePointer<UInt32>) -> OSStatus,
        (@convention(c) (Queue, AudioQueuePropertyID, UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt32>?) -> OSStatus).self)
    static let setProperty = c(
        AudioQueueSetProperty as @convention(c) (AudioQueueRef, AudioQueuePropertyID, UnsafeRawPointer, UInt32) -> OSStatus,
        (@convention(c) (Queue, AudioQueuePropertyID, UnsafeRawPointer?, UInt32) -> OSStatus).self)
    static let addPropertyListener = c(
        AudioQueueAddPropertyListener as @convention(c) (AudioQueueRef, AudioQueuePropertyID, AudioQueuePropertyListenerProc, UnsafeMutableRawPointer?) -> OSStatus,
        (@convention(c) (Queue, AudioQueuePropertyID, AudioQueuePropertyListenerProc?, UnsafeMutableRawPointer?) -> OSStatus).self)
    static let getCurrentTime = c(
        AudioQueueGetCurrentTime as @convention(c) (AudioQueueRef, AudioQueueTimelineRef?, UnsafeMutablePointer<AudioTimeStamp>?, UnsafeMutablePointer<Bool>?) -> OSStatus,
        (@convention(c) (Queue, AudioQueueTimelineRef?, UnsafeMutablePointer<AudioTimeStamp>?, UnsafeMutablePointer<UInt8>?) -> OSStatus).self)
    static let deviceGetCurrentTime = c(
        AudioQueueDeviceGetCurrentTime as @convention(c) (AudioQueueRef, UnsafeMutablePointer<AudioTimeStamp>) -> OSStatus,
        (@convention(c) (Queue, UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus).self)
    static let deviceTranslateTime = c(
        AudioQueueDeviceTranslateTime as @convention(c) (AudioQueueRef, UnsafePointer<AudioTimeStamp>, UnsafeMutablePointer<AudioTimeStamp>) -> OSStatus,
        (@convention(c) (Queue, UnsafePointer<AudioTimeStamp>?, UnsafeMutablePointer<AudioTimeStamp>?) -> OSStatus).self)
    static let deviceGetNearestStartTime = c(
        AudioQueueDeviceGetNearestStartTime as @convention(c) (AudioQueueRef, UnsafeMutablePointer<AudioTimeStamp>, UInt32) -> OSStatus,
        (@convention(c) (Queue, UnsafeMutablePointer<AudioTimeStamp>?, UInt32) -> OSStatus).self)
}
