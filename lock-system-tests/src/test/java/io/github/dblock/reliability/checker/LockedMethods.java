package io.github.dblock.reliability.checker;

import javax.sql.DataSource;

import io.github.dblock.DistributedLock;
import io.github.dblock.LockMode;
import io.github.dblock.LockTemplate;
import io.github.dblock.autoconfigure.DistributedLockProperties;
import io.github.dblock.interceptor.DistributedLockAdvisor;
import io.github.dblock.interceptor.DistributedLockInterceptor;
import io.github.dblock.interceptor.LockAttributeSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code @DistributedLock} methods of one checker node: a small Spring context with the node's {@link LockTemplate},
 * a {@link DataSourceTransactionManager} on the node's pool and the lock advisor at its default order (ahead of
 * the transaction advisor, as the auto-configuration sets it). Built once per node and run; close it at the end.
 * Thread-safe.
 */
final class LockedMethods implements AutoCloseable {

	private final AnnotationConfigApplicationContext context;

	private final Service service;

	private final TransactionTemplate transactions;

	LockedMethods(LockTemplate locks, DataSource pool) {
		this.context = new AnnotationConfigApplicationContext();
		this.context.registerBean(LockTemplate.class, () -> locks);
		this.context.registerBean("transactionManager", PlatformTransactionManager.class,
				() -> new DataSourceTransactionManager(pool));
		this.context.register(Config.class);
		this.context.refresh();
		this.service = this.context.getBean(Service.class);
		this.transactions = new TransactionTemplate(this.context.getBean(PlatformTransactionManager.class));
	}

	/** The annotated methods. */
	Service service() {
		return this.service;
	}

	/** Transactions of the context's transaction manager, for a caller's transaction around a locked method. */
	TransactionTemplate transactions() {
		return this.transactions;
	}

	@Override
	public void close() {
		this.context.close();
	}

	/** The annotated methods: the section runs inside, under the lock of the resource given as first argument. */
	static class Service {

		/** Runs the section under the lock (renewed lease, wait 1 s); joins a caller's transaction, if any. */
		@DistributedLock(resource = "#{#p0}", waitTime = "1s")
		public void locked(String resource, Runnable section) {
			section.run();
		}

		/**
		 * Runs the section under a PESSIMISTIC lock (wait 1 s), in the transaction of the attempt that got the lock.
		 */
		@DistributedLock(resource = "#{#p0}", waitTime = "1s", mode = LockMode.PESSIMISTIC)
		public void lockedPessimistic(String resource, Runnable section) {
			section.run();
		}

		/**
		 * Runs the section under a PESSIMISTIC lock with a wait time of 10 s ({@link Checker#TURN_WAIT}), in the
		 * transaction of the attempt that got the lock.
		 */
		@DistributedLock(resource = "#{#p0}", waitTime = "10s", mode = LockMode.PESSIMISTIC)
		public void lockedPessimisticPatiently(String resource, Runnable section) {
			section.run();
		}

		/** Runs the section under the lock (renewed lease, wait 1 s), in a new transaction of its own. */
		@DistributedLock(resource = "#{#p0}", waitTime = "1s")
		@Transactional(propagation = Propagation.REQUIRES_NEW)
		public void lockedInNewTransaction(String resource, Runnable section) {
			section.run();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableTransactionManagement
	static class Config {

		@Bean
		@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
		static DistributedLockAdvisor distributedLockAdvisor(ObjectProvider<LockTemplate> locks,
				Environment environment) {
			LockAttributeSource attributes = new LockAttributeSource(environment);
			return new DistributedLockAdvisor(attributes,
					new DistributedLockInterceptor(attributes, locks::getObject, null),
					DistributedLockProperties.DEFAULT_INTERCEPTOR_ORDER);
		}

		@Bean
		Service service() {
			return new Service();
		}

	}

}
