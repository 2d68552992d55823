package io.github.dblock;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.core.annotation.AliasFor;

/**
 * Runs the annotated method of a Spring bean while holding a distributed lock on a resource.
 * <p>
 * The lock is acquired before the method runs and before the method's own {@code @Transactional} transaction
 * begins (the lock advisor is ordered outside the transaction advisor, see
 * {@code distributed-lock.interceptor.order}), and released after that transaction has committed or rolled
 * back. If the method is called inside a transaction that is already active (the caller's), the release is
 * deferred until that transaction completes, so no other node can take the lock and read data that is not
 * committed yet.
 * <p>
 * In {@link LockMode#PESSIMISTIC} and {@link LockMode#OPTIMISTIC} mode the lock belongs to a transaction on the
 * lock data source, and the method runs inside it: the interceptor starts it (PESSIMISTIC joins the caller's if
 * there is one), the method's {@code @Transactional} joins it, and its writes commit together with the release.
 * As with {@code @Transactional}, an unchecked exception rolls back and a checked one commits. OPTIMISTIC runs
 * the method again after a conflict, so it must be safe to re-run.
 * <p>
 * The {@link #resource() resource} is a template: literal text with {@code #{...}} SpEL expressions, evaluated
 * over the method's arguments, and {@code ${...}} property placeholders, resolved once at start-up. In SpEL,
 * arguments are available by name ({@code #order}, which needs the {@code -parameters} compiler flag that
 * Spring Boot's build plugins set), by position ({@code #p0}, {@code #a0}), and beans as {@code @beanName};
 * the root object has {@code method}, {@code args}, {@code target} and {@code targetClass}. Examples:
 * <pre class="code">
 * &#64;DistributedLock(resource = "nightly-report")
 * &#64;DistributedLock(resource = "order:#{#order.id}")
 * &#64;DistributedLock(resource = "${spring.application.name}:stock:#{#sku}", waitTime = "2s", leaseTime = "PT1M")
 * </pre>
 * Misuse fails clearly: an expression that does not parse, an unparsable or out-of-range duration, or a method
 * the proxy cannot intercept fails application start-up naming the method; an expression that throws, evaluates
 * to {@code null} or blank, or builds an invalid resource name fails the call with an
 * {@link IllegalArgumentException} naming the method before anything is locked.
 * <p>
 * The method may declare a parameter of type {@link LockHandle}; callers pass {@code null} and the interceptor
 * fills in the held lock, for its {@linkplain LockHandle#fencingToken() fencing token}. {@link CurrentLock#get()}
 * gives the same from deeper in the call.
 * <p>
 * The annotation works on methods called through the Spring proxy, as with {@code @Transactional}. Start-up fails
 * for methods no proxy can intercept (private, static, final, of a final class, or missing from the interfaces
 * of a JDK proxy). Calls from within the same bean (self-invocation) bypass the proxy and are not locked; that
 * cannot be detected.
 *
 * @see LockTemplate
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
public @interface DistributedLock {

	/** Alias for {@link #resource()}. */
	@AliasFor("resource")
	String value() default "";

	/** The resource to lock: a template with {@code #{...}} SpEL and {@code ${...}} placeholders. Required. */
	@AliasFor("value")
	String resource() default "";

	/**
	 * How long to wait for the lock, as a duration string ({@code "500ms"}, {@code "5s"}, {@code "PT5S"}; a bare
	 * number is milliseconds; placeholders allowed); {@code "0"} for a single attempt. Empty: the configured
	 * {@code distributed-lock.wait-time}. On time-out the method is not run and
	 * {@link LockNotAcquiredException} is thrown.
	 */
	String waitTime() default "";

	/**
	 * How long the lock stays valid on the database server's clock if it is not released first, as a duration
	 * string, at least {@code "10ms"}; such a lease is not renewed. Empty: the configured
	 * {@code distributed-lock.lease-time}, renewed while held.
	 */
	String leaseTime() default "";

	/**
	 * Keeps the lock taken until this long after acquisition even if the method returns earlier (ShedLock's
	 * {@code lockAtLeastFor}), as a duration string; empty for none. Useful with {@code @Scheduled} jobs on several
	 * instances whose clocks or schedules drift. Must not exceed the lease time (without a {@link #leaseTime()},
	 * the configured default lease time; checked at start-up).
	 */
	String minHoldTime() default "";

	/**
	 * What to do when the lock stays busy for the whole wait time: throw {@link LockNotAcquiredException} (the
	 * default) or {@link OnLockFailure#SKIP skip} the method. Only contention is handled this way; database failures
	 * and lost locks always propagate.
	 */
	OnLockFailure onFailure() default OnLockFailure.THROW;

	/**
	 * Name of a {@link LockFailureHandler} bean that decides what the call returns when the lock stays busy; empty
	 * for none. Cannot be combined with {@code onFailure = SKIP}.
	 */
	String failureHandler() default "";

	/**
	 * The lock mode; empty (the default) uses the configured {@code distributed-lock.mode}. Give at most one:
	 * {@code mode = LockMode.PESSIMISTIC}.
	 */
	LockMode[] mode() default {};

	/**
	 * The kind of lock: {@link LockType#EXCLUSIVE} (the default, a mutex), or the {@link LockType#READ read} or
	 * {@link LockType#WRITE write} side of the resource's read/write lock, which is a different lock from its
	 * exclusive one (see {@link LockType}). READ and WRITE need {@link LockMode#LEASE}: start-up fails, naming the
	 * method, if the annotation's mode, or without one {@code distributed-lock.mode}, is another.
	 * <pre class="code">
	 * &#64;DistributedLock(resource = "catalog:#{#id}", type = LockType.READ)
	 * public Product find(long id) { ... }
	 *
	 * &#64;DistributedLock(resource = "catalog:#{#product.id}", type = LockType.WRITE)
	 * public void update(Product product) { ... }
	 * </pre>
	 */
	LockType type() default LockType.EXCLUSIVE;

}
