package io.github.dblock.test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A TCP proxy on loopback for fault injection in tests: it forwards every connection it accepts on
 * {@code 127.0.0.1:}{@link #port()} to a target on loopback (the test database), and a test switches at run time,
 * for all connections ({@code FaultProxy} methods) or for one ({@link Link} methods), between:
 * <ul>
 * <li>{@linkplain #passThrough() pass through};</li>
 * <li>{@linkplain #blackhole(Direction) blackhole}: stop forwarding in one or both directions without closing any
 * socket; the data is held (and delivered in order once the direction passes again) or, with
 * {@linkplain #discard(Direction) discard}, dropped; the peers just see silence;</li>
 * <li>{@linkplain #delay(Duration) delay} every chunk by a fixed time;</li>
 * <li>{@linkplain #reset() reset}: close every current connection with a TCP RST on both sides;</li>
 * <li>{@linkplain #refuseNewConnections(boolean) refuse} new connections (accepted and reset at once);</li>
 * <li>{@linkplain #dropReplyToNext(Predicate) drop the reply}: deliver the next client request that matches a
 * predicate (for example {@link #isQuery(String) isQuery("COMMIT")}), then drop the server's reply and discard the
 * connection's traffic in both directions from then on (a lost {@code COMMIT} reply);</li>
 * <li>{@linkplain #holdReplyToNext(Predicate) hold the reply}: the same, but the connection's traffic is held, not
 * dropped, until the test lets it {@linkplain #passThrough() pass} again (a late {@code COMMIT} reply).</li>
 * </ul>
 * A setting made on the proxy applies to every current connection and to every connection accepted later; a
 * setting made on one {@link Link} applies to that connection until the next setting on the proxy.
 * <p>
 * A connection whose client-to-server direction is blackholed keeps its server side open when the client closes:
 * the server learns nothing, as with a client that died behind a partition. Such server sockets are closed by
 * {@link #reset()} and {@link #close()}.
 * <p>
 * Requests are matched per chunk read from the client socket: a synchronous JDBC driver writes one request at a
 * time, so one chunk holds one MySQL protocol packet unless the request is large. {@link #jdbcUrl(String)} turns TLS
 * off so that the requests can be read.
 * <p>
 * Thread-safe: the settings may be changed from any thread while traffic flows. Each connection uses two platform
 * daemon threads; the proxy itself one.
 */
public final class FaultProxy implements AutoCloseable {

	private static final Pattern JDBC_URL = Pattern.compile("^(jdbc:(?:mysql|mariadb)://)([^/?]+)(.*)$",
			Pattern.CASE_INSENSITIVE);

	private final InetSocketAddress target;

	private final ServerSocket server;

	private final Thread acceptor;

	private final List<Link> links = new CopyOnWriteArrayList<>();

	private final AtomicInteger accepted = new AtomicInteger();

	private final AtomicInteger refused = new AtomicInteger();

	private final AtomicReference<Trap> armed = new AtomicReference<>();

	private final Object settings = new Object();

	private Flow defaultUp = Flow.PASS;

	private Flow defaultDown = Flow.PASS;

	private long defaultDelayMillis;

	private volatile boolean refusing;

	private volatile boolean closed;

	private FaultProxy(InetSocketAddress target) throws IOException {
		this.target = target;
		this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		this.acceptor = new Thread(this::acceptLoop, "fault-proxy-accept-" + this.server.getLocalPort());
		this.acceptor.setDaemon(true);
		this.acceptor.start();
	}

	/**
	 * Starts a proxy to {@code host:port}.
	 * @param host the target host; must resolve to a loopback address
	 * @param port the target port
	 * @return the running proxy; the caller closes it
	 * @throws IllegalArgumentException if the target is not on loopback
	 * @throws IllegalStateException if no local port could be bound
	 */
	public static FaultProxy start(String host, int port) {
		InetSocketAddress target = new InetSocketAddress(host, port);
		if (target.isUnresolved() || !target.getAddress().isLoopbackAddress()) {
			throw new IllegalArgumentException("FaultProxy forwards to loopback only, not to " + host + ":" + port);
		}
		try {
			return new FaultProxy(target);
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not bind a loopback port for the fault proxy", ex);
		}
	}

	/**
	 * Starts a proxy to the host and port of a {@code jdbc:mysql://} (or {@code jdbc:mariadb://}) URL with a single
	 * host; the port defaults to 3306.
	 * @param jdbcUrl the URL of the target database
	 * @return the running proxy; the caller closes it
	 * @throws IllegalArgumentException if the URL is not of that form or its host is not on loopback
	 */
	public static FaultProxy forJdbcUrl(String jdbcUrl) {
		String hostPort = hostPort(jdbcUrl);
		int colon = hostPort.lastIndexOf(':');
		boolean hasPort = colon > 0 && !hostPort.endsWith("]");
		String host = hasPort ? hostPort.substring(0, colon) : hostPort;
		if (host.startsWith("[") && host.endsWith("]")) {
			host = host.substring(1, host.length() - 1);
		}
		return start(host, hasPort ? Integer.parseInt(hostPort.substring(colon + 1)) : 3306);
	}

	private static String hostPort(String jdbcUrl) {
		Matcher matcher = JDBC_URL.matcher(jdbcUrl);
		if (!matcher.matches() || matcher.group(2).contains(",")) {
			throw new IllegalArgumentException("Not a single-host jdbc:mysql URL: " + jdbcUrl);
		}
		return matcher.group(2);
	}

	/** The local port on {@code 127.0.0.1} (or the JVM's loopback address) that clients connect to. */
	public int port() {
		return this.server.getLocalPort();
	}

	/**
	 * {@code originalUrl} with its host and port replaced by this proxy's, and with {@code sslMode=DISABLED} and
	 * {@code allowPublicKeyRetrieval=true} added unless the URL sets {@code sslMode} or {@code useSSL} itself (the
	 * proxy matches requests by their bytes, which TLS would hide).
	 * @param originalUrl a single-host {@code jdbc:mysql://} URL
	 * @return the URL to hand to the driver or pool under test
	 * @throws IllegalArgumentException if the URL is not of that form
	 */
	public String jdbcUrl(String originalUrl) {
		Matcher matcher = JDBC_URL.matcher(originalUrl);
		if (!matcher.matches() || matcher.group(2).contains(",")) {
			throw new IllegalArgumentException("Not a single-host jdbc:mysql URL: " + originalUrl);
		}
		String rest = matcher.group(3);
		String lower = rest.toLowerCase(Locale.ROOT);
		if (!lower.contains("sslmode=") && !lower.contains("usessl=")) {
			String extra = "sslMode=DISABLED&allowPublicKeyRetrieval=true";
			if (rest.contains("?")) {
				rest = rest + (rest.endsWith("?") || rest.endsWith("&") ? "" : "&") + extra;
			}
			else {
				rest = (rest.isEmpty() ? "/" : rest) + "?" + extra;
			}
		}
		return matcher.group(1) + this.server.getInetAddress().getHostAddress() + ":" + port() + rest;
	}

	/** How many connections the proxy has accepted since it started, refused ones included. */
	public int acceptedConnections() {
		return this.accepted.get();
	}

	/** How many connections were refused while {@link #refuseNewConnections(boolean)} was on. */
	public int refusedConnections() {
		return this.refused.get();
	}

	/** How many connections are open now (either side still open). */
	public int openConnections() {
		return (int) this.links.stream().filter(Link::isOpen).count();
	}

	/** The open connections, oldest first; a snapshot. */
	public List<Link> connections() {
		return this.links.stream().filter(Link::isOpen).toList();
	}

	/**
	 * The connection accepted last that is still open.
	 * @throws IllegalStateException if there is none
	 */
	public Link latest() {
		List<Link> open = connections();
		if (open.isEmpty()) {
			throw new IllegalStateException("No open connection through the fault proxy");
		}
		return open.get(open.size() - 1);
	}

	/** Forwards everything in both directions without delay, on every connection, now and later; disarms any trap. */
	public FaultProxy passThrough() {
		return apply(Flow.PASS, Flow.PASS, 0, true);
	}

	/**
	 * Stops forwarding in {@code direction} on every connection, now and later, without closing any socket; data
	 * read meanwhile is held and delivered in order when the direction passes again.
	 */
	public FaultProxy blackhole(Direction direction) {
		return apply(direction.up() ? Flow.HOLD : null, direction.down() ? Flow.HOLD : null, -1, false);
	}

	/**
	 * Like {@link #blackhole(Direction)}, but the data read meanwhile is dropped for good.
	 */
	public FaultProxy discard(Direction direction) {
		return apply(direction.up() ? Flow.DROP : null, direction.down() ? Flow.DROP : null, -1, false);
	}

	/** Delays every chunk, in both directions, by {@code delay} before forwarding it, on every connection. */
	public FaultProxy delay(Duration delay) {
		return apply(null, null, delay.toMillis(), false);
	}

	/** Closes every current connection with a TCP RST on both sides; later connections are not affected. */
	public FaultProxy reset() {
		for (Link link : this.links) {
			link.reset();
		}
		return this;
	}

	/**
	 * While {@code refuse} is on, new connections are accepted and reset at once (the driver sees a communications
	 * error); current connections are not affected.
	 */
	public FaultProxy refuseNewConnections(boolean refuse) {
		this.refusing = refuse;
		return this;
	}

	/**
	 * Arms a one-shot trap on all connections: the next client request (on any connection) that matches
	 * {@code request} is delivered to the server, its reply is dropped, and that connection discards all traffic in
	 * both directions from then on. Other connections are not affected.
	 * @param request tested on each chunk the client sends; called on proxy threads
	 * @return a latch that opens when the trap fires
	 */
	public CountDownLatch dropReplyToNext(Predicate<byte[]> request) {
		Trap trap = new Trap(Objects.requireNonNull(request), false);
		this.armed.set(trap);
		return trap.fired;
	}

	/**
	 * Arms a one-shot trap on all connections like {@link #dropReplyToNext(Predicate)}, except that the connection's
	 * traffic in both directions is held from the matching request on (the request itself is delivered) until the
	 * connection (or the proxy) is switched to {@link #passThrough()}: the reply then arrives as late as the test
	 * wants.
	 * @param request tested on each chunk the client sends; called on proxy threads
	 * @return a latch that opens when the trap fires
	 */
	public CountDownLatch holdReplyToNext(Predicate<byte[]> request) {
		Trap trap = new Trap(Objects.requireNonNull(request), true);
		this.armed.set(trap);
		return trap.fired;
	}

	/**
	 * A predicate on a client chunk: a MySQL {@code COM_QUERY} packet whose statement, trimmed, equals {@code sql}
	 * ignoring case (Connector/J sends {@code commit} in lower case for {@code Connection.commit()}).
	 */
	public static Predicate<byte[]> isQuery(String sql) {
		String expected = sql.trim().toLowerCase(Locale.ROOT);
		return (chunk) -> {
			String text = queryText(chunk);
			return text != null && text.trim().toLowerCase(Locale.ROOT).equals(expected);
		};
	}

	/**
	 * A predicate on a client chunk: a MySQL {@code COM_QUERY} packet whose statement contains {@code fragment},
	 * ignoring case.
	 */
	public static Predicate<byte[]> isQueryContaining(String fragment) {
		String expected = fragment.toLowerCase(Locale.ROOT);
		return (chunk) -> {
			String text = queryText(chunk);
			return text != null && text.toLowerCase(Locale.ROOT).contains(expected);
		};
	}

	/** The SQL text of a chunk that starts with a {@code COM_QUERY} packet, else {@code null}. */
	static String queryText(byte[] chunk) {
		if (chunk.length < 5 || chunk[4] != 0x03) {
			return null;
		}
		int length = (chunk[0] & 0xff) | (chunk[1] & 0xff) << 8 | (chunk[2] & 0xff) << 16;
		int end = Math.min(chunk.length, 4 + length);
		return new String(chunk, 5, Math.max(0, end - 5), StandardCharsets.UTF_8);
	}

	/** Stops accepting, closes every connection (both sides) and ends the proxy's threads. Idempotent. */
	@Override
	public void close() {
		this.closed = true;
		try {
			this.server.close();
		}
		catch (IOException ex) {
			// closing anyway
		}
		for (Link link : this.links) {
			link.reset();
		}
		try {
			this.acceptor.join(2_000);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private FaultProxy apply(Flow up, Flow down, long delayMillis, boolean disarm) {
		synchronized (this.settings) {
			if (up != null) {
				this.defaultUp = up;
			}
			if (down != null) {
				this.defaultDown = down;
			}
			if (delayMillis >= 0) {
				this.defaultDelayMillis = delayMillis;
			}
			if (disarm) {
				this.armed.set(null);
			}
			for (Link link : this.links) {
				link.set(up, down, delayMillis, disarm);
			}
		}
		return this;
	}

	private void acceptLoop() {
		while (!this.closed) {
			Socket client;
			try {
				client = this.server.accept();
			}
			catch (IOException ex) {
				return; // closed
			}
			this.accepted.incrementAndGet();
			if (this.refusing) {
				this.refused.incrementAndGet();
				abort(client);
				continue;
			}
			Socket upstream = new Socket();
			try {
				client.setTcpNoDelay(true);
				upstream.setTcpNoDelay(true);
				upstream.connect(this.target, 5_000);
			}
			catch (IOException ex) {
				abort(client);
				abort(upstream);
				continue;
			}
			synchronized (this.settings) {
				Link link = new Link(this.accepted.get(), client, upstream, this.defaultUp, this.defaultDown,
						this.defaultDelayMillis);
				this.links.removeIf((each) -> !each.isOpen());
				this.links.add(link);
				link.start();
			}
		}
	}

	private static void abort(Socket socket) {
		try {
			if (!socket.isClosed()) {
				if (socket.isConnected()) {
					socket.setSoLinger(true, 0); // RST instead of FIN
				}
				socket.close();
			}
		}
		catch (IOException ex) {
			// already gone
		}
	}

	/** A direction of traffic. */
	public enum Direction {

		/** Client to server: requests. */
		UPSTREAM,

		/** Server to client: replies. */
		DOWNSTREAM,

		/** Both. */
		BOTH;

		boolean up() {
			return this != DOWNSTREAM;
		}

		boolean down() {
			return this != UPSTREAM;
		}

	}

	private enum Flow {

		PASS, HOLD, DROP

	}

	private static final class Trap {

		final Predicate<byte[]> request;

		/** Hold the traffic after the request (a late reply) instead of dropping it (a lost reply). */
		final boolean hold;

		final CountDownLatch fired = new CountDownLatch(1);

		Trap(Predicate<byte[]> request, boolean hold) {
			this.request = request;
			this.hold = hold;
		}

	}

	/**
	 * One proxied connection: a client socket and the socket to the target. Thread-safe.
	 */
	public final class Link {

		private final int number;

		private final Socket client;

		private final Socket upstream;

		private Flow up;

		private Flow down;

		private long delayMillis;

		private Trap trap;

		private volatile boolean clientOpen = true;

		private volatile boolean upstreamOpen = true;

		private volatile boolean replyDropped;

		private Link(int number, Socket client, Socket upstream, Flow up, Flow down, long delayMillis) {
			this.number = number;
			this.client = client;
			this.upstream = upstream;
			this.up = up;
			this.down = down;
			this.delayMillis = delayMillis;
		}

		private void start() {
			Thread requests = new Thread(() -> pump(true), "fault-proxy-" + port() + "-" + this.number + "-up");
			Thread replies = new Thread(() -> pump(false), "fault-proxy-" + port() + "-" + this.number + "-down");
			requests.setDaemon(true);
			replies.setDaemon(true);
			requests.start();
			replies.start();
		}

		/** The 1-based number of this connection in the proxy's accept order. */
		public int number() {
			return this.number;
		}

		/** Whether either socket of this connection is still open. */
		public boolean isOpen() {
			return this.clientOpen || this.upstreamOpen;
		}

		/** Whether the socket to the client is still open. */
		public boolean isClientOpen() {
			return this.clientOpen;
		}

		/** Whether the socket to the server is still open. */
		public boolean isServerOpen() {
			return this.upstreamOpen;
		}

		/** Whether a {@link #dropReplyToNext(Predicate) drop-reply} trap fired on this connection. */
		public boolean replyDropped() {
			return this.replyDropped;
		}

		/** Forwards everything on this connection without delay; disarms its trap. */
		public Link passThrough() {
			set(Flow.PASS, Flow.PASS, 0, true);
			return this;
		}

		/** As {@link FaultProxy#blackhole(Direction)}, for this connection only. */
		public Link blackhole(Direction direction) {
			set(direction.up() ? Flow.HOLD : null, direction.down() ? Flow.HOLD : null, -1, false);
			return this;
		}

		/** As {@link FaultProxy#discard(Direction)}, for this connection only. */
		public Link discard(Direction direction) {
			set(direction.up() ? Flow.DROP : null, direction.down() ? Flow.DROP : null, -1, false);
			return this;
		}

		/** As {@link FaultProxy#delay(Duration)}, for this connection only. */
		public Link delay(Duration delay) {
			set(null, null, delay.toMillis(), false);
			return this;
		}

		/** As {@link FaultProxy#dropReplyToNext(Predicate)}, for this connection only. */
		public CountDownLatch dropReplyToNext(Predicate<byte[]> request) {
			return arm(new Trap(Objects.requireNonNull(request), false));
		}

		/** As {@link FaultProxy#holdReplyToNext(Predicate)}, for this connection only. */
		public CountDownLatch holdReplyToNext(Predicate<byte[]> request) {
			return arm(new Trap(Objects.requireNonNull(request), true));
		}

		private CountDownLatch arm(Trap armedTrap) {
			synchronized (this) {
				this.trap = armedTrap;
			}
			return armedTrap.fired;
		}

		/** Closes both sockets of this connection with a TCP RST. */
		public void reset() {
			synchronized (this) {
				this.clientOpen = false;
				this.upstreamOpen = false;
				notifyAll();
			}
			abort(this.client);
			abort(this.upstream);
		}

		private synchronized void set(Flow newUp, Flow newDown, long newDelayMillis, boolean disarm) {
			if (this.replyDropped) {
				return; // a connection whose reply was dropped stays silent: its protocol state is lost anyway
			}
			if (newUp != null) {
				this.up = newUp;
			}
			if (newDown != null) {
				this.down = newDown;
			}
			if (newDelayMillis >= 0) {
				this.delayMillis = newDelayMillis;
			}
			if (disarm) {
				this.trap = null;
			}
			notifyAll();
		}

		private void pump(boolean requests) {
			Socket from = requests ? this.client : this.upstream;
			Socket to = requests ? this.upstream : this.client;
			byte[] buffer = new byte[64 * 1024];
			try {
				InputStream in = from.getInputStream();
				OutputStream out = to.getOutputStream();
				while (true) {
					awaitNotHeld(requests); // a held direction is not read: data stays in the kernel buffers
					int n = in.read(buffer);
					if (n < 0) {
						endOfStream(requests);
						return;
					}
					byte[] chunk = Arrays.copyOf(buffer, n);
					Trap fired = requests ? checkTraps(chunk) : null;
					long delay;
					synchronized (this) {
						while (isOpen() && flow(requests) == Flow.HOLD && fired == null) {
							wait();
						}
						if (!isOpen()) {
							return;
						}
						if (fired == null && flow(requests) == Flow.DROP) {
							continue;
						}
						delay = this.delayMillis;
					}
					if (delay > 0) {
						Thread.sleep(delay);
					}
					out.write(chunk);
					out.flush();
					if (fired != null) {
						fired.fired.countDown();
					}
				}
			}
			catch (IOException | InterruptedException ex) {
				// a socket was reset or closed: end this connection unless its silence must be kept
				endOfStream(requests);
			}
		}

		/** Tests the connection's trap, then the proxy's; a match switches this connection to discard or hold. */
		private Trap checkTraps(byte[] chunk) {
			Trap own;
			synchronized (this) {
				own = this.trap;
			}
			Trap fired = null;
			if (own != null && own.request.test(chunk)) {
				fired = own;
			}
			else {
				Trap shared = FaultProxy.this.armed.get();
				if (shared != null && shared.request.test(chunk) && FaultProxy.this.armed.compareAndSet(shared, null)) {
					fired = shared;
				}
			}
			if (fired != null) {
				synchronized (this) {
					this.trap = null;
					Flow after = fired.hold ? Flow.HOLD : Flow.DROP;
					this.replyDropped = !fired.hold;
					this.up = after; // after this chunk, which is still delivered
					this.down = after; // set before the request is forwarded: its reply cannot slip through
					notifyAll();
				}
			}
			return fired;
		}

		private synchronized Flow flow(boolean requests) {
			return requests ? this.up : this.down;
		}

		private synchronized void awaitNotHeld(boolean requests) throws InterruptedException {
			while (isOpen() && flow(requests) == Flow.HOLD) {
				wait();
			}
		}

		private void endOfStream(boolean requests) {
			boolean silent;
			synchronized (this) {
				// a peer that closes behind a blackhole is not seen by the other peer
				silent = flow(requests) != Flow.PASS && isOpen();
				if (requests) {
					this.clientOpen = false;
				}
				else {
					this.upstreamOpen = false;
				}
				if (!silent) {
					this.clientOpen = false;
					this.upstreamOpen = false;
				}
				notifyAll();
			}
			abort(requests ? this.client : this.upstream);
			if (!silent) {
				abort(requests ? this.upstream : this.client);
			}
		}

		@Override
		public String toString() {
			return "FaultProxy.Link#" + this.number + "[up=" + flow(true) + ", down=" + flow(false) + "]";
		}

	}

}
