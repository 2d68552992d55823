package io.github.dblock.autoconfigure;

import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import io.github.dblock.DistributedLock;
import io.github.dblock.idempotency.Idempotent;
import io.github.dblock.semaphore.DistributedSemaphore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.AotDetector;
import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.Opcodes;
import org.springframework.asm.Type;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfigurationPackages;
import org.springframework.core.NativeDetector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.type.classreading.CachingMetadataReaderFactory;
import org.springframework.core.type.classreading.MetadataReader;
import org.springframework.core.type.classreading.MetadataReaderFactory;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Says once at start-up, in one WARN, which calls of {@link DistributedLock @DistributedLock},
 * {@link DistributedSemaphore @DistributedSemaphore} and {@link Idempotent @Idempotent} methods can be seen to bypass
 * the Spring proxy and so run without their lock, permit or key, which nothing at run time would report:
 * <ul>
 * <li><b>self-invocation</b>: a bean's class (or a lambda in it) calls one of its own annotated methods on itself,
 * found by reading the class files of the beans that have annotated methods;</li>
 * <li><b>classes that are not beans</b>: a class in the application's packages (those of
 * {@code @SpringBootApplication}, {@link AutoConfigurationPackages}) has annotated methods, but no bean of the context
 * is of that class or a subclass, so its instances are created with {@code new} and never proxied.</li>
 * </ul>
 * What it cannot see (a call on {@code this} through a field or a helper object, a bean in another context) is
 * documented instead. It changes no behaviour and logs nothing when it finds nothing. Skipped in a native image and
 * in an AOT-processed application, where classes are not scanned at run time. Not thread-safe; called once by the
 * container.
 */
public final class UnproxiedCallsWarning implements SmartInitializingSingleton {

	private static final Log logger = LogFactory.getLog(UnproxiedCallsWarning.class);

	private static final List<Class<? extends Annotation>> ANNOTATIONS = List.of(DistributedLock.class,
			DistributedSemaphore.class, Idempotent.class);

	/** The bean through which Spring Boot shares the metadata read by component scanning. */
	private static final String SHARED_METADATA_READER_FACTORY = "org.springframework.boot.autoconfigure."
			+ "internalCachingMetadataReaderFactory";

	private final ListableBeanFactory beanFactory;

	private final @Nullable ClassLoader classLoader;

	UnproxiedCallsWarning(ListableBeanFactory beanFactory, @Nullable ClassLoader classLoader) {
		this.beanFactory = beanFactory;
		this.classLoader = classLoader;
	}

	@Override
	public void afterSingletonsInstantiated() {
		if (NativeDetector.inNativeImage() || AotDetector.useGeneratedArtifacts()) {
			return;
		}
		List<String> findings = new ArrayList<>();
		try {
			findings.addAll(selfInvocations());
			findings.addAll(classesThatAreNotBeans());
		}
		catch (RuntimeException | LinkageError ex) {
			logger.debug("Could not look for calls that bypass the @DistributedLock proxy", ex);
			return;
		}
		if (!findings.isEmpty()) {
			logger.warn(findings.size() + " call(s) or class(es) bypass the Spring proxy, so these annotated methods "
					+ "run WITHOUT their distributed lock, semaphore permit or idempotency key there: "
					+ String.join("; ", findings) + ". Call annotated methods on the bean from another bean (inject "
					+ "it), or take the lock with LockTemplate inside the method. Nothing else is logged.");
		}
	}

	/**
	 * Calls of a bean class's annotated methods on the object itself, as
	 * {@code Type.caller() calls its own @DistributedLock method target()}, sorted.
	 */
	Set<String> selfInvocations() {
		Set<String> found = new TreeSet<>();
		Set<Class<?>> seen = new LinkedHashSet<>();
		for (Class<?> type : beanClasses()) {
			if (seen.add(type) && hasAnnotatedMethods(type)) {
				found.addAll(selfInvocations(type));
			}
		}
		return found;
	}

	/** The self-invocations of one class's annotated methods, its superclasses' included. */
	Set<String> selfInvocations(Class<?> type) {
		Map<String, String> annotated = new HashMap<>(); // name + descriptor -> @Annotation
		Set<String> owners = new LinkedHashSet<>();
		List<Class<?>> hierarchy = new ArrayList<>();
		for (Class<?> current = type; current != null && current != Object.class
				&& !current.getName().startsWith("java."); current = current.getSuperclass()) {
			hierarchy.add(current);
			owners.add(Type.getInternalName(current));
			for (Method method : current.getDeclaredMethods()) {
				Class<? extends Annotation> annotation = annotationOf(method);
				if (annotation != null && !Modifier.isStatic(method.getModifiers())) {
					annotated.putIfAbsent(method.getName() + Type.getMethodDescriptor(method),
							"@" + annotation.getSimpleName());
				}
			}
		}
		Set<String> found = new TreeSet<>();
		if (annotated.isEmpty()) {
			return found;
		}
		for (Class<?> current : hierarchy) {
			readClass(current, new ClassVisitor(Opcodes.ASM9) {
				@Override
				public @Nullable MethodVisitor visitMethod(int access, String name, String descriptor,
						@Nullable String signature, String @Nullable [] exceptions) {
					String caller = callerName(name);
					return new MethodVisitor(Opcodes.ASM9) {
						@Override
						public void visitMethodInsn(int opcode, String owner, String calledName, String calledDescriptor,
								boolean isInterface) {
							String annotation = annotated.get(calledName + calledDescriptor);
							if (annotation != null && opcode != Opcodes.INVOKESTATIC && owners.contains(owner)) {
								found.add(current.getName() + "." + caller + "() calls its own " + annotation + " method "
										+ calledName + "() on itself");
							}
						}
					};
				}
			});
		}
		return found;
	}

	/** The method a call is written in: {@code lambda$name$0} is a lambda in {@code name}. */
	private static String callerName(String name) {
		if (name.startsWith("lambda$")) {
			int end = name.indexOf('$', "lambda$".length());
			return (end > 0) ? name.substring("lambda$".length(), end) : name;
		}
		return name;
	}

	private void readClass(Class<?> type, ClassVisitor visitor) {
		ClassLoader loader = (type.getClassLoader() != null) ? type.getClassLoader() : this.classLoader;
		if (loader == null) {
			return;
		}
		try (InputStream in = loader.getResourceAsStream(Type.getInternalName(type) + ".class")) {
			if (in != null) {
				new ClassReader(in).accept(visitor, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
			}
		}
		catch (IOException ex) {
			logger.debug("Could not read the class file of " + type.getName(), ex);
		}
	}

	/**
	 * Classes in the application's packages with annotated methods of which no bean is an instance, as
	 * {@code Type (no bean of this class: @DistributedLock on method())}, sorted.
	 */
	Set<String> classesThatAreNotBeans() {
		Set<String> found = new TreeSet<>();
		if (!AutoConfigurationPackages.has(this.beanFactory)) {
			return found;
		}
		Set<Class<?>> beanClasses = beanClasses();
		PathMatchingResourcePatternResolver resolver = new PathMatchingResourcePatternResolver(this.classLoader);
		MetadataReaderFactory readers = metadataReaderFactory(resolver);
		for (String packageName : AutoConfigurationPackages.get(this.beanFactory)) {
			String pattern = "classpath*:" + ClassUtils.convertClassNameToResourcePath(packageName) + "/**/*.class";
			Resource[] resources;
			try {
				resources = resolver.getResources(pattern);
			}
			catch (IOException ex) {
				logger.debug("Could not scan " + packageName + " for annotated methods", ex);
				continue;
			}
			for (Resource resource : resources) {
				String description = notABean(resource, readers, beanClasses);
				if (description != null) {
					found.add(description);
				}
			}
		}
		return found;
	}

	private @Nullable String notABean(Resource resource, MetadataReaderFactory readers, Set<Class<?>> beanClasses) {
		MetadataReader reader;
		try {
			reader = readers.getMetadataReader(resource);
		}
		catch (IOException ex) {
			return null;
		}
		List<String> methods = new ArrayList<>();
		for (Class<? extends Annotation> annotation : ANNOTATIONS) {
			reader.getAnnotationMetadata()
				.getAnnotatedMethods(annotation.getName())
				.forEach((method) -> methods.add("@" + annotation.getSimpleName() + " on " + method.getMethodName()
						+ "()"));
		}
		if (methods.isEmpty() || reader.getClassMetadata().isAnnotation()) {
			return null;
		}
		String className = reader.getClassMetadata().getClassName();
		Class<?> type;
		try {
			type = ClassUtils.forName(className, this.classLoader);
		}
		catch (ClassNotFoundException | LinkageError ex) {
			return null;
		}
		for (Class<?> beanClass : beanClasses) {
			if (type.isAssignableFrom(beanClass)) {
				return null;
			}
		}
		return className + " is no bean's class, so its instances are never proxied (" + String.join(", ", methods)
				+ ")";
	}

	private MetadataReaderFactory metadataReaderFactory(PathMatchingResourcePatternResolver resolver) {
		if (this.beanFactory.containsBean(SHARED_METADATA_READER_FACTORY)) {
			Object shared = this.beanFactory.getBean(SHARED_METADATA_READER_FACTORY);
			if (shared instanceof MetadataReaderFactory factory) {
				return factory;
			}
		}
		return new CachingMetadataReaderFactory(resolver);
	}

	/** The user classes (proxies unwrapped) of the beans whose type is known without creating anything. */
	private Set<Class<?>> beanClasses() {
		Set<Class<?>> classes = new LinkedHashSet<>();
		for (String name : this.beanFactory.getBeanDefinitionNames()) {
			Class<?> type = this.beanFactory.getType(name, false);
			if (type != null) {
				classes.add(ClassUtils.getUserClass(type));
			}
		}
		return classes;
	}

	private static @Nullable Class<? extends Annotation> annotationOf(Method method) {
		if (method.isSynthetic() || method.isBridge()) {
			return null;
		}
		for (Class<? extends Annotation> annotation : ANNOTATIONS) {
			if (AnnotationUtils.isCandidateClass(method.getDeclaringClass(), annotation)
					&& AnnotatedElementUtils.hasAnnotation(method, annotation)) {
				return annotation;
			}
		}
		return null;
	}

	/**
	 * Whether a class declares (or inherits) a method carrying one of the annotations; {@code false} for a class whose
	 * methods cannot be read (one referring to a class that is not on the class path).
	 */
	static boolean hasAnnotatedMethods(Class<?> type) {
		if (!AnnotationUtils.isCandidateClass(type, ANNOTATIONS)) {
			return false;
		}
		boolean[] found = { false };
		try {
			ReflectionUtils.doWithMethods(type, (method) -> found[0] = true,
					(method) -> !found[0] && annotationOf(method) != null);
		}
		catch (LinkageError | RuntimeException ex) {
			return false;
		}
		return found[0];
	}

}
