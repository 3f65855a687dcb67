# jaq — Audio Queue Services on JACK, in Swift.
#
#   make demo   set up (Debian packages), build, run the demo
#   make test   set up, build (debug and release), run the tests
#   make bench  set up, build release, run the benchmarks against the peer tools

SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin
export DEBIAN_FRONTEND := noninteractive

# Debian packages the build, the tests and the demo need.
# gcc: the tests build the C example and a C helper with cc against libAudioToolbox.so.
PACKAGES := pkg-config gcc time libjack-jackd2-dev libsndfile1-dev libsoxr-dev jackd2 sox libsox-fmt-all \
            jack-capture jack-tools sndfile-tools ecasound

SWIFT ?= swift
SWIFT_FLAGS ?=

.PHONY: all deps build release test demo bench clean

all: build

# Installs only what is missing; needs root (or sudo) the first time.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  echo "jackd2 jackd/tweak_rt_limits boolean false" | $$SUDO debconf-set-selections 2>/dev/null || true; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "swift not found (expected at /opt/swift/usr/bin)"; exit 1; }

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)

test: deps
	$(SWIFT) build $(SWIFT_FLAGS)
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	$(SWIFT) test --no-parallel $(SWIFT_FLAGS)

demo: build
	./Configs/demo.sh

# jaq record against jack_capture, 2/16/64 channels, 60 s each in real time; writes Docs/benchmarks.md.
bench: release
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product jaq
	.build/release/jaq-bench --seconds 60 --channels 2,16,64

.PHONY: fuzz asan

# make fuzz: mutants of seed files of every container and of the kept crashers; a crash or hang saves the
# mutant in out/fuzz-crashes and fails. Docs/audiofile.md, "Hostile input".
FUZZ_SEED ?= 1
FUZZ_ITERATIONS ?= 100000
fuzz: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product FileFuzz
	JACK_NO_START_SERVER=1 .build/debug/FileFuzz fuzz --seed $(FUZZ_SEED) --iterations $(FUZZ_ITERATIONS) \
	  --corpus Tests/HostileInputTests/Fixtures --crashes out/fuzz-crashes

# make asan: the hostile-input tests (crashers, non-files, hostile formats and calls, a fuzz run) with every
# Swift target built with AddressSanitizer, in a scratch path of their own.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/HostileInputTests/lsan.supp \
	$(SWIFT) test --sanitize=address --scratch-path .build-asan --no-parallel $(SWIFT_FLAGS) --filter HostileInputTests

clean:
	rm -rf .build out
