import CAudioToolbox
import Synchronization
import QueueCore

// ExtAudioFileWriteAsync as Apple documents it: the priming call (0, NULL) makes a ring of
// client frames and a writer thread; each later call copies its frames into the ring (no lock,
// no allocation, no file I/O: fit for a JACK process callback) and posts the thread, which
// converts and writes them. A full ring is kExtAudioFileError_AsyncWriteBufferOverflow with
// nothing of that call kept; an error of the writer thread is returned by the next call.

/// The ring and writer thread of one ExtAudioFile's asynchronous writes.
final class AsyncWriter: @unchecked Sendable {
    /// Seconds of client frames the ring holds.
    static let seconds = 4.0

    /// Bytes of one interleaved client frame.
    let frameBytes: Int
    /// Frames the ring holds.
    let capacity: Int
    private let storage: UnsafeMutableRawPointer
    /// Frames written into the ring so far; stored by the caller's thread only.
    private let writeIndex = Atomic<Int>(0)
    /// Frames the writer thread has written to the file so far; stored by it only.
    private let readIndex = Atomic<Int>(0)
    /// The first error of the writer thread not yet returned.
    private let error = Atomic<Int32>(0)
    private let stopping = Atomic<Bool>(false)
    private let wake = Semaphore()
    private let finished = Semaphore()
    /// The interleaved client format the caller's buffers are copied from.
    private let client: AudioStreamBasicDescription

    /// A ring of `seconds` of `client` frames and its writer thread, which hands each run of
    /// interleaved frames to `sink` (on the writer thread).
    init(client: AudioStreamBasicDescription, frameBytes: Int, sink: @escaping @Sendable (UnsafeRawPointer, Int) -> OSStatus) {
        self.client = client
        self.frameBytes = frameBytes
        capacity = max(Int(client.mSampleRate * Self.seconds), 4096)
        let bytes = capacity * frameBytes
        storage = .allocate(byteCount: bytes, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)  // faulted in now, not in a callback
        QueueThread(name: "ExtAudioFile async") { [self] in run(sink) }.detach()
    }

    deinit { storage.deallocate() }

    // MARK: The caller's side (realtime-safe)

    /// Copies `frames` frames of `list` into the ring and wakes the writer thread: noErr, the
    /// writer thread's earlier error, or kExtAudioFileError_AsyncWriteTooLarge /
    /// kExtAudioFileError_AsyncWriteBufferOverflow (nothing of this call kept). No lock, no
    /// allocation.
    func enqueue(_ frames: Int, from list: UnsafePointer<AudioBufferList>) -> OSStatus {
        let earlier = error.exchange(0, ordering: .acquiring)
        if earlier != noErr { return earlier }
        guard frames > 0 else { return noErr }
        guard frames <= capacity else { return kExtAudioFileError_AsyncWriteTooLarge }
        let written = writeIndex.load(ordering: .relaxed)
        let read = readIndex.load(ordering: .acquiring)
        guard frames <= capacity - (written - read) else { return kExtAudioFileError_AsyncWriteBufferOverflow }
        let start = written % capacity
        let first = min(frames, capacity - start)
        copy(list, at: 0, frames: first, to: start)
        if first < frames { copy(list, at: first, frames: frames - first, to: 0) }
        writeIndex.store(written + frames, ordering: .releasing)
        wake.post()
        return noErr
    }

    private func copy(_ list: UnsafePointer<AudioBufferList>, at offset: Int, frames: Int, to slot: Int) {
        let destination = storage + slot * frameBytes
        if client.isNonInterleaved {
            ClientBuffers.interleave(list, at: offset, frames: frames, into: destination, format: client)
        } else if let data = list.pointee.mBuffers.mData {
            destination.copyMemory(from: UnsafeRawPointer(data) + offset * frameBytes, byteCount: frames * frameBytes)
        }
    }

    // MARK: Not realtime

    /// Waits until the writer thread has written everything in the ring.
    func drain() {
        while readIndex.load(ordering: .acquiring) != writeIndex.load(ordering: .relaxed) {
            wake.post()
            HostClock.sleep(seconds: 0.001)
        }
    }

    /// Drains the ring and ends the writer thread; returns its error not yet returned.
    func stop() -> OSStatus {
        drain()
        stopping.store(true, ordering: .releasing)
        wake.post()
        finished.wait()
        return takeError()
    }

    /// The writer thread's error not yet returned (noErr if none), cleared.
    func takeError() -> OSStatus { error.exchange(0, ordering: .acquiring) }

    // MARK: The writer thread

    private func run(_ sink: (UnsafeRawPointer, Int) -> OSStatus) {
        defer { finished.post() }
        while true {
            wake.wait()
            while true {
                let read = readIndex.load(ordering: .relaxed)
                let available = writeIndex.load(ordering: .acquiring) - read
                guard available > 0 else { break }
                let start = read % capacity
                let run = min(available, capacity - start)
                let status = sink(storage + start * frameBytes, run)
                // An error is kept for the next call; the ring still empties, so later calls
                // do not overflow behind it.
                if status != noErr { _ = error.compareExchange(expected: 0, desired: status, ordering: .acquiringAndReleasing) }
                readIndex.store(read + run, ordering: .releasing)
            }
            if stopping.load(ordering: .acquiring) { return }
        }
    }
}
