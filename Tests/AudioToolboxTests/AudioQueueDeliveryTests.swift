import Testing
import Foundation
import Dispatch
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// The threads (pthread ids) the output callback below ran on.
let outputCallbackThreads = Mutex<Set<UInt>>([])

/// The guide's output callback, noting which thread it runs on.
func threadNamingOutputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let thread = UInt(pthread_self())
    outputCallbackThreads.withLock { _ = $0.insert(thread) }
    handleOutputBuffer(user, queue, buffer)
}

/// Where callbacks and listeners run: a CFRunLoop (Listing 3-17) or a DispatchQueue.
@Suite struct AudioQueueDeliveryTests {
    final class RunLoopPlayer: @unchecked Sendable {
        let context = PlaybackContext(frames: 48000, channels: 2, framesPerBuffer: 4800)
        var queue: AudioQueueRef?
        var playerThread: UInt = 0
    }

    @Test func callbacksRunOnTheRunLoopGivenWhenItRunsInTheDefaultMode() throws {
        let driver = ManualDriver(periodFrames: 256)
        let player = RunLoopPlayer()
        let ready = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let errors = Mutex<[OSStatus]>([])
        // The guide's player thread: create the queue on this thread's run loop, prime,
        // start, and run the loop until the callback has stopped the queue (Listing 3-17).
        let thread = Thread {
            let user = Unmanaged.passUnretained(player.context).toOpaque()
            player.playerThread = UInt(pthread_self())
            var format = lpcm()
            var queue: AudioQueueRef?
            let status = AudioQueueNewOutput(&format, threadNamingOutputCallback, user,
                                             CFRunLoopGetCurrent(), CFRunLoopMode.commonModes.rawValue, 0, &queue, device: driver)
            errors.withLock { $0.append(status) }
            guard let queue else { ready.signal(); return }
            player.queue = queue
            AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, isRunningListener, user)
            for _ in 0..<3 {
                var buffer: AudioQueueBufferRef?
                AudioQueueAllocateBuffer(queue, 4800 * 4, &buffer)
                handleOutputBuffer(user, queue, buffer!)
            }
            errors.withLock { $0.append(AudioQueueStart(queue, nil)) }
            ready.signal()
            repeat {
                CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.05, false)
            } while player.context.isRunningFlag.withLock({ $0 }) || player.context.runningChanges.withLock({ $0.count < 2 })
            CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.1, false)
            AudioQueueDispose(queue, true)
            finished.signal()
        }
        thread.name = "player-run-loop"
        thread.start()
        ready.wait()
        #expect(errors.withLock { $0 } == [noErr, noErr])
        driver.startRecordingPlayback()
        var cycles = 0
        while finished.wait(timeout: .now()) == .timedOut && cycles < 2000 {
            driver.run(cycles: 1)
            cycles += 1
            usleep(200)
        }
        #expect(player.context.runningChanges.withLock { $0 } == [1, 0])
        #expect(outputCallbackThreads.withLock { $0 } == [player.playerThread], "every callback ran on the player's run loop thread")
        let played = driver.recordedPlayback(port: 0).samples
        let first = try #require(played.firstIndex { $0 != 0 })
        #expect(firstMismatch(Array(played[first..<min(played.count, first + 48000)]), player.context.expected(channel: 0)) == nil)
    }

    @Test func aRunLoopThatDoesNotRunDeliversNothingUntilItRuns() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 96000, channels: 2, framesPerBuffer: 2400)
        let user = Unmanaged.passUnretained(context).toOpaque()
        var format = lpcm()
        var queue: AudioQueueRef?
        // This thread's run loop, which this test runs only later.
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, CFRunLoopGetCurrent(), nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 2400 * 4, &buffer) == noErr)
            handleOutputBuffer(user, q, buffer!)
        }
        let before = context.callbacks.withLock { $0 }
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.allowsWaiting = false
        driver.run(cycles: 40)
        usleep(50_000)
        #expect(context.callbacks.withLock { $0 } == before, "no callback while the run loop does not run")
        CFRunLoopRunInMode(CFRunLoopMode.defaultMode, 0.2, false)
        #expect(context.callbacks.withLock { $0 } > before, "callbacks once it runs")
        #expect(AudioQueueDispose(q, true) == noErr)
    }

    @Test func dispatchQueueVariantsRunTheirBlocksOnTheQueueGiven() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal { port, frame in Float(signal(Int(frame), port)) / 32768 }
        let callbacks = DispatchQueue(label: "jaq.test.callbacks")
        let key = DispatchSpecificKey<String>()
        callbacks.setSpecific(key: key, value: "callbacks")
        let onQueue = Mutex<[Bool]>([])
        var format = lpcm()
        var output: AudioQueueRef?
        #expect(AudioQueueNewOutputWithDispatchQueue(&output, &format, 0, callbacks, device: driver) { _, _ in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "callbacks") }
        } == noErr)
        let out = try #require(output)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(out, 4096, &buffer) == noErr)
        buffer!.pointee.mAudioDataByteSize = 4096
        #expect(AudioQueueEnqueueBuffer(out, buffer!, 0, nil) == noErr)
        #expect(AudioQueueStart(out, nil) == noErr)
        driver.run(cycles: 8)
        #expect(waitUntil { onQueue.withLock { $0.count } == 1 })
        var input: AudioQueueRef?
        let frames = Mutex(0)
        #expect(AudioQueueNewInputWithDispatchQueue(&input, &format, 0, callbacks, device: driver) { queue, buffer, time, packets, _ in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "callbacks") }
            frames.withLock { $0 += Int(packets) }
            AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        } == noErr)
        let inq = try #require(input)
        var inBuffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(inq, 4 * 256, &inBuffer) == noErr)
        #expect(AudioQueueEnqueueBuffer(inq, inBuffer!, 0, nil) == noErr)
        #expect(AudioQueueStart(inq, nil) == noErr)
        driver.run(cycles: 8)
        #expect(waitUntil { frames.withLock { $0 } >= 7 * 256 })
        #expect(onQueue.withLock { $0 }.allSatisfy { $0 })
        #expect(AudioQueueDispose(out, true) == noErr)
        #expect(AudioQueueDispose(inq, true) == noErr)
    }
}
